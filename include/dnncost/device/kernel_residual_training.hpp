#pragma once
/// @file kernel_residual_training.hpp
/// The training of the kernel-level device model's residual (KernelResidual::fit, which
/// DeviceModel::fit calls when it fits one): Adam over the residual's GNN, early-stopped on
/// validation.
///
/// Kept out of kernel_residual.hpp so that a program that only prices with saved device models
/// (loading one, residual included, needs the GNN's forward pass alone) does not compile the
/// optimiser and the epoch loop. Where this header is included, it registers the training;
/// KernelResidual::fit raises config_error in a program that never includes it. The compiled
/// library includes it itself; in compiled mode (core/config.hpp) this header declares nothing.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/rng.hpp>
#include <dnncost/device/kernel_residual.hpp>
#include <dnncost/estimators/estimator.hpp>
#include <dnncost/features/encode.hpp>
#include <dnncost/nn/parameter.hpp>
#include <dnncost/optim/optimizer.hpp>
#include <dnncost/train/epoch_loop.hpp>

#if DNNCOST_HEADER_ONLY
namespace dnncost::device::detail {

struct KernelResidualTraining {
    static estimators::FitResult fit(KernelResidual& self, const std::vector<KernelGraphSample>& train,
                                     std::span<const double> train_ms, const std::vector<KernelGraphSample>& validation,
                                     std::span<const double> validation_ms, const estimators::FitOptions& options) {
        const auto t0 = std::chrono::steady_clock::now();
        if (train.empty()) raise<config_error>("KernelResidual::fit: no training networks");
        self.check_set(train, train_ms, "training");
        self.check_set(validation, validation_ms, "validation");
        if (!validation.empty() && validation.front().features.cols() != train.front().features.cols())
            raise<shape_error>("KernelResidual::fit: validation network 0 has ", validation.front().features.cols(),
                               " feature columns, the training networks have ", train.front().features.cols());
        const std::uint64_t seed = options.seed ? options.seed : self.m_o.seed;
        self.initialise(train, seed);

        const auto enc_train = self.encode_set(train);
        const auto enc_val = self.encode_set(validation);
        const auto t_train = self.log_ratios(train, train_ms);
        const auto t_val = self.log_ratios(validation, validation_ms);
        const bool has_val = !validation.empty();
        const double zero_score = self.mean_square(has_val ? t_val : t_train);

        auto params = self.parameters();
        optim::AdamOptions ao;
        ao.lr = self.m_o.learning_rate;
        ao.weight_decay = self.m_o.weight_decay;
        ao.decoupled = true;
        optim::Adam<double> opt(params, ao);
        Rng rng(seed ^ 0x9e3779b97f4a7c15ull);
        std::vector<std::size_t> order(train.size());
        std::iota(order.begin(), order.end(), std::size_t{0});

        const auto epoch = [&] {
            for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
            double total = 0;
            for (std::size_t b0 = 0; b0 < order.size(); b0 += KernelResidual::batch_size) {
                const std::size_t b1 = std::min(order.size(), b0 + KernelResidual::batch_size);
                std::vector<const features::EncodedGraph*> ptrs;
                std::vector<double> t;
                for (std::size_t i = b0; i < b1; ++i) {
                    ptrs.push_back(&enc_train[order[i]]);
                    t.push_back(t_train[order[i]]);
                }
                total += self.batch_loss_and_gradient(ptrs, t) * static_cast<double>(b1 - b0);
                opt.step(nullptr);
            }
            return total / static_cast<double>(order.size());
        };
        const auto score = [&](double loss) {
            if (!has_val) return loss;
            const auto r = self.residuals(enc_val);
            double s = 0;
            for (std::size_t i = 0; i < r.size(); ++i) s += (r[i] - t_val[i]) * (r[i] - t_val[i]);
            return s / static_cast<double>(r.size());
        };
        train::EpochLoopOptions loop;
        loop.max_epochs = options.max_epochs > 0 ? options.max_epochs : self.m_o.max_epochs;
        loop.patience = options.patience > 0 ? options.patience : self.m_o.patience;
        const auto run = train::run_epochs<double>(
            loop, std::span<nn::Parameter<double>* const>(params), epoch, score, [](int) { return std::string(); },
            [&] { return opt.learning_rate(); }, [&](double lr) { opt.set_learning_rate(lr); }, options.on_epoch);
        run.restore(params);

        estimators::FitResult result;
        result.epochs = run.epochs;
        result.validation_metric =
            has_val ? "validation MSE of log(measured / kernel sum)" : "training MSE of log(measured / kernel sum)";
        const bool better = run.best_epoch >= 0 && run.best_score < zero_score;
        self.m_zero = !better;
        result.best_validation = better ? run.best_score : zero_score;
        result.summary = better
                             ? dnncost::concat("kernel residual: best epoch ", run.best_epoch + 1, " of ", run.epochs,
                                               ", ", result.validation_metric, " ", run.best_score, " against ",
                                               zero_score, " for the kernel sum alone")
                             : dnncost::concat("kernel residual: kept the zero residual (the kernel sum): no epoch of ",
                                               run.epochs, " beat its ", result.validation_metric, " ", zero_score,
                                               " (best ", run.best_score, ")");
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return result;
    }
};

inline const bool kernel_residual_training_registered = [] {
    kernel_residual_training = &KernelResidualTraining::fit;
    kernel_residual_fitter = [](const KernelResidualOptions& o, const std::vector<KernelGraphSample>& train,
                                std::span<const double> train_ms, const std::vector<KernelGraphSample>& validation,
                                std::span<const double> validation_ms, const estimators::FitOptions& options,
                                std::shared_ptr<KernelResidual>& out) {
        auto residual = std::make_shared<KernelResidual>(o);
        auto r = residual->fit(train, train_ms, validation, validation_ms, options);
        out = std::move(residual);
        return r;
    };
    return true;
}();

}  // namespace dnncost::device::detail
#endif
