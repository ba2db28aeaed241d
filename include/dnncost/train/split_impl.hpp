#pragma once
/// @file split_impl.hpp
/// The definitions of split.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by split.hpp in header-only mode.
#include <dnncost/train/split.hpp>

DNNCOST_FUNC auto dnncost::train::make_split(std::size_t n_items, const SplitOptions& opt,
                                             std::span<const double> proxy) -> Split {
    if (opt.n_train == 0) raise<config_error>("make_split: the training set cannot be empty");
    // each part alone must fit, so that the sum below cannot wrap around
    const bool fits = opt.n_train <= n_items && opt.n_validation <= n_items && opt.n_test <= n_items &&
                      opt.n_train + opt.n_validation + opt.n_test <= n_items;
    if (!fits)
        raise<config_error>("make_split: ", opt.n_train, " training + ", opt.n_validation, " validation + ", opt.n_test,
                            " test items requested, but the data set has only ", n_items);
    if (opt.n_test == 0 && opt.n_train + opt.n_validation == n_items)
        raise<config_error>("make_split: no item left for the test set (", n_items, " items, ", opt.n_train,
                            " training, ", opt.n_validation, " validation)");
    if (opt.sampling == Sampling::uniform && proxy.size() != n_items)
        raise<config_error>("make_split: uniform sampling needs one proxy value per item (", proxy.size(),
                            " values for ", n_items, " items)");

    Rng rng(opt.seed);
    std::vector<std::size_t> order(n_items);
    std::iota(order.begin(), order.end(), std::size_t{0});
    rng.shuffle(order.begin(), order.end());

    Split s;
    std::vector<char> used(n_items, 0);
    if (opt.sampling == Sampling::random) {
        s.train.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(opt.n_train));
    } else {
        std::vector<std::size_t> ranked = order;  // shuffled first: ties keep a random order
        std::stable_sort(ranked.begin(), ranked.end(),
                         [&](std::size_t a, std::size_t b) { return proxy[a] < proxy[b]; });
        for (std::size_t bin = 0; bin < opt.n_train; ++bin) {
            const std::size_t lo = bin * n_items / opt.n_train;
            const std::size_t hi = (bin + 1) * n_items / opt.n_train;
            s.train.push_back(ranked[lo + static_cast<std::size_t>(rng.below(hi - lo))]);
        }
    }
    for (auto i : s.train) used[i] = 1;
    for (auto i : order) {
        if (used[i]) continue;
        if (s.validation.size() < opt.n_validation) {
            s.validation.push_back(i);
        } else if (opt.n_test == 0 || s.test.size() < opt.n_test) {
            s.test.push_back(i);
        } else {
            break;
        }
    }
    std::sort(s.train.begin(), s.train.end());
    std::sort(s.validation.begin(), s.validation.end());
    std::sort(s.test.begin(), s.test.end());
    return s;
}
