#pragma once
/// @file train_data_impl.hpp
/// The definitions of train_data.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by train_data.hpp in header-only mode.
#include <dnncost/train/train_data.hpp>

DNNCOST_FUNC auto dnncost::train::check_train_data(const TrainData& d, std::string_view who, std::string_view what,
                                                   bool may_be_empty) -> void {
    if (d.graphs.size() != d.targets.size())
        raise<shape_error>(who, ": ", what, " data has ", d.graphs.size(), " graphs and ", d.targets.size(),
                           " targets");
    if (d.graphs.empty() && !may_be_empty) raise<config_error>(who, ": empty ", what, " data");
    for (std::size_t i = 0; i < d.size(); ++i) {
        if (!d.graphs[i]) raise<config_error>(who, ": ", what, " graph ", i, " is null");
        if (!std::isfinite(d.targets[i]) || !(d.targets[i] > 0))
            raise<config_error>(who, ": ", what, " target ", i, " is ", d.targets[i],
                                " (costs must be positive and finite)");
    }
}

DNNCOST_FUNC auto dnncost::train::check_train_data(const MultiTrainData& d, std::string_view who, std::string_view what,
                                                   bool may_be_empty) -> void {
    if (d.targets.empty()) raise<config_error>(who, ": ", what, " data has no target");
    for (std::size_t k = 0; k < d.targets.size(); ++k)
        check_train_data(TrainData{d.graphs, d.targets[k], nullptr}, who,
                         d.targets.size() == 1 ? std::string(what) : dnncost::concat(what, " (target ", k, ")"),
                         may_be_empty);
}
