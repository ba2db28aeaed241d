#pragma once
/// @file mlp_regressor.hpp
/// The project's own MLP (nn::make_mlp, optim::Adam) as a per-kernel latency regressor.
///
/// Trained as an nn::Sequential (device_model_training.hpp), it keeps only the layers' weights
/// and evaluates them with plain matrix products: a program that prices with it does not compile
/// the layer machinery.
///
/// The larger functions are defined in mlp_regressor_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/device/tabular_regressor.hpp>
#include <dnncost/nn/activation_functions.hpp>

namespace dnncost::device {

/// Hyper-parameters of MlpRegressor; checked when the regressor is built.
struct MlpRegressorOptions {
    std::vector<Index> hidden{64, 64};  ///< hidden widths
    /// ELU: smooth, and linear for large inputs, so it extrapolates a power law in the log features
    /// along a straight line (docs/kernel_regressors.md compares it with ReLU).
    nn::Act activation = nn::Act::elu;
    double learning_rate = 3e-3;
    double weight_decay = 1e-5;  ///< AdamW decay
    Index batch_size = 64;
    int max_epochs = 600;
    int patience = 60;                  ///< early stopping on the validation split
    int lr_patience = 15;               ///< halve the rate after this many epochs without progress
    double validation_fraction = 0.15;  ///< of the rows, held out for early stopping
    std::uint64_t seed = 1;
};

/// An MLP on standardised features predicting standardised log-latency.
///
/// A feature column that is never negative in training is read as log1p(x): FLOPs and bytes
/// span orders of magnitude, and a roofline-like law is then close to piecewise linear in the
/// inputs, which a ReLU network fits and extrapolates well. Other columns are read as they are.
/// Training is single-threaded and draws every random number from the seed, so the same rows
/// and seed give the same model, bit for bit.
class MlpRegressor final : public TabularRegressor {
public:
    /// @throws config_error on a bad hyper-parameter
    explicit MlpRegressor(MlpRegressorOptions o = {});

    std::string kind() const override { return "mlp"; }
    /// Epoch whose weights were kept (early stopping), after fit.
    int best_epoch() const { return m_best_epoch; }

    /// Read bytes written by save() of an MlpRegressor.
    /// @throws parse_error naming `source` (see TabularRegressor::restore)
    static MlpRegressor load(std::string_view bytes, const std::string& source = "<memory>");

protected:
    Index min_rows() const override { return 10; }

    void fit_log(const Mat<double>& x,
                 const Eigen::VectorXd& log_y) override;  // runs fit_log_impl through detail::tabular_fitting

    Eigen::VectorXd predict_log(const Mat<double>& x) const override;

    void save_model(io::BinaryWriter& w) const override;

    void load_model(io::BinaryReader& r, std::size_t n_features) override;

private:
    friend struct detail::TabularTraining;
    /// The training itself (device_model_training.hpp).
    void fit_log_impl(const Mat<double>& x, const Eigen::VectorXd& log_y);

    /// The widths from d features through the hidden layers to one output.
    void set_dims(Index d);
    /// log1p of the log columns; a negative value there is an input unlike every training row
    /// (a count below zero), refused rather than read as something it is not.
    Mat<double> transform(const Mat<double>& x) const;
    std::string feature_name(Index j) const;
    Mat<double> standardise(const Mat<double>& t) const;

    MlpRegressorOptions m_o;
    std::vector<Index> m_dims;
    /// Per layer its weight (inputs x outputs) then its bias (1 x outputs): the trained
    /// network's parameters in the order nn::Sequential lists them.
    std::vector<Mat<double>> m_params;
    std::vector<std::uint8_t> m_log_column;
    Eigen::RowVectorXd m_mean, m_scale;
    double m_y_mean = 0, m_y_scale = 1;
    int m_best_epoch = -1;
};

}  // namespace dnncost::device

#if !defined(DNNCOST_COMPILED)
#include <dnncost/device/mlp_regressor_impl.hpp>
#endif
