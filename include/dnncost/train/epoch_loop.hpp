#pragma once
/// @file epoch_loop.hpp
/// The training loop every GNN estimator shares: epochs of an optimiser, ReduceLROnPlateau on
/// the epoch's score, early stopping with the best epoch's weights kept, and one progress line
/// per epoch that the caller may use to stop. What an epoch does and how it is scored is the
/// estimator's; when to stop and which weights to keep is decided here, once.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/matrix.hpp>
#include <dnncost/nn/parameter.hpp>
#include <dnncost/optim/schedule.hpp>

namespace dnncost::train {

/// The schedule of one fit.
struct EpochLoopOptions {
    int max_epochs = 300;
    int patience = 50;            ///< epochs without a better score before stopping
    double plateau_factor = 0.5;  ///< learning-rate factor of ReduceLROnPlateau
    int plateau_patience = 10;    ///< epochs without a better score before the rate drops
};

/// What the loop ended with. `best_weights` holds a copy of every parameter at the best epoch
/// (empty when no epoch ran); the loop leaves the parameters at the last epoch's values.
template <class Scalar>
struct EpochLoopResult {
    int epochs = 0;
    int best_epoch = -1;
    double best_score = 0.0;
    std::vector<Mat<Scalar>> best_weights;
    /// Write best_weights back into `params` (the same list the loop was given).
    void restore(std::span<nn::Parameter<Scalar>* const> params) const {
        for (std::size_t i = 0; i < best_weights.size() && i < params.size(); ++i) params[i]->value = best_weights[i];
    }
};

/// Run epochs until `options.max_epochs`, early stopping, or `on_epoch` returning true.
/// @param train_epoch  () -> mean training loss of one epoch
/// @param score        (loss) -> the epoch's score, lower is better (a validation score, or the loss)
/// @param note         (epoch) -> text appended to that epoch's progress line (may be empty)
/// @param learning_rate, set_learning_rate  the optimiser's rate, read and set by the plateau schedule
/// @throws config_error for max_epochs or patience below 1
template <class Scalar, class TrainEpoch, class Score, class Note, class GetRate, class SetRate>
EpochLoopResult<Scalar> run_epochs(const EpochLoopOptions& options, std::span<nn::Parameter<Scalar>* const> params,
                                   TrainEpoch&& train_epoch, Score&& score, Note&& note, GetRate&& learning_rate,
                                   SetRate&& set_learning_rate,
                                   const std::function<bool(const std::string&)>& on_epoch) {
    if (options.max_epochs < 1) raise<config_error>("run_epochs: max_epochs must be >= 1, got ", options.max_epochs);
    if (options.patience < 1) raise<config_error>("run_epochs: patience must be >= 1, got ", options.patience);
    optim::ReduceLROnPlateau plateau(options.plateau_factor, options.plateau_patience);
    optim::EarlyStopping stop(options.patience);
    EpochLoopResult<Scalar> result;
    for (int epoch = 0; epoch < options.max_epochs; ++epoch) {
        const double loss = train_epoch();
        const double s = score(loss);
        if (stop.update(s, epoch)) {
            result.best_weights.clear();
            for (auto* p : params) result.best_weights.push_back(p->value);
        }
        set_learning_rate(plateau.step(s, learning_rate()));
        result.epochs = epoch + 1;
        const bool user_stop =
            on_epoch && on_epoch(dnncost::concat("epoch ", epoch + 1, " loss ", loss, " val ", s, " lr ",
                                                         learning_rate(), note(epoch)));
        if (stop.should_stop() || user_stop) break;
    }
    result.best_epoch = stop.best_epoch();
    result.best_score = stop.best();
    return result;
}

}  // namespace dnncost::train
