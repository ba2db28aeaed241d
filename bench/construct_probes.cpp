// Construct probes: twelve hand-built networks of constructs deployed CNN families use and the
// search spaces lack, none a published architecture: bottlenecks whose 3x3 convolution is grouped
// (group widths 4-24), channel split and shuffle units, depthwise 7x7 blocks with a layer norm over
// the channels between permutes and a GELU MLP, an 11x11 stride-4 stem with unpadded pooling and
// two wide hidden layers on the flattened map, and pre-activation dense blocks (BatchNorm, Relu,
// then the convolution; growth by concatenation). `device check` and `measure` take them as files.
//   dnncost_construct_probes OUT_DIR   (writes OUT_DIR/00.onnx ... 11.onnx and OUT_DIR/networks.tsv)
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/model_file.hpp>
#include <dnncost/spaces/builder.hpp>
#include <dnncost/spaces/transformer_layer.hpp>
using namespace dnncost;
using spaces::NetworkBuilder;
using Shape = graph::Shape;
static std::vector<std::int64_t> I(std::initializer_list<std::int64_t> v) { return v; }

struct B {
    NetworkBuilder b;
    explicit B(std::string n) : b(std::move(n)) {}
    int cbr(int x, std::int64_t out, std::int64_t k, std::int64_t s, std::int64_t g, const std::string& n,
            bool act = true) {
        x = b.batch_norm(b.conv(x, out, k, s, g, n + ".conv"), n + ".bn");
        return act ? b.unary("Relu", x, n + ".relu") : x;
    }
    int head(int x, std::int64_t classes) {
        x = b.flatten(b.global_average_pool(x, "head.pool"), "head.flatten");
        return b.gemm(x, classes, "classifier");
    }
};

// bottleneck blocks whose spatial convolution is grouped (group width gw), inner = width * ratio
graph::Graph grouped(std::int64_t res, std::int64_t gw, double ratio, std::vector<std::int64_t> widths, int depth) {
    B n(dnncost::concat("probe:grouped-gw", gw, "-r", res));
    int x = n.b.input("input", {1, 3, res, res});
    x = n.cbr(x, 64, 7, 2, 1, "stem");
    x = n.b.max_pool(x, 3, 2, 1, "stem.pool");
    for (std::size_t s = 0; s < widths.size(); ++s)
        for (int d = 0; d < depth; ++d) {
            const auto name = dnncost::concat("s", s, "b", d);
            const std::int64_t stride = d == 0 && s > 0 ? 2 : 1;
            const auto w = widths[s];
            auto inner = static_cast<std::int64_t>(w * ratio);
            inner = (inner / gw) * gw;
            int y = n.cbr(x, inner, 1, 1, 1, name + ".reduce");
            y = n.cbr(y, inner, 3, stride, inner / gw, name + ".grouped");
            y = n.cbr(y, w, 1, 1, 1, name + ".expand", false);
            int sc = x;
            if (n.b.shape(x)[1] != w || stride != 1) sc = n.cbr(x, w, 1, stride, 1, name + ".short", false);
            x = n.b.unary("Relu", n.b.add(y, sc, name + ".add"), name + ".out");
        }
    return n.b.finish({n.head(x, 1000)});
}

// channel split, a branch of 1x1 / depthwise 3x3 / 1x1, concatenation, and a channel shuffle
graph::Graph shuffle(std::int64_t res, std::vector<std::int64_t> widths) {
    B n(dnncost::concat("probe:shuffle-r", res));
    int x = n.b.input("input", {1, 3, res, res});
    x = n.cbr(x, 24, 3, 2, 1, "stem");
    x = n.b.max_pool(x, 3, 2, 1, "stem.pool");
    for (std::size_t s = 0; s < widths.size(); ++s)
        for (int d = 0; d < 3; ++d) {
            const auto name = dnncost::concat("s", s, "b", d);
            const auto w = widths[s];
            int left, right;
            if (d == 0) {  // downsampling unit: both branches see the whole input
                left = n.cbr(x, n.b.shape(x)[1], 3, 2, n.b.shape(x)[1], name + ".l.dw", false);
                left = n.cbr(left, w / 2, 1, 1, 1, name + ".l.pw");
                right = n.cbr(x, w / 2, 1, 1, 1, name + ".r.pw1");
                right = n.cbr(right, w / 2, 3, 2, w / 2, name + ".r.dw", false);
                right = n.cbr(right, w / 2, 1, 1, 1, name + ".r.pw2");
            } else {
                const auto parts = n.b.split(x, 1, {w / 2, w / 2}, name + ".split");
                left = parts[0];
                right = n.cbr(parts[1], w / 2, 1, 1, 1, name + ".r.pw1");
                right = n.cbr(right, w / 2, 3, 1, w / 2, name + ".r.dw", false);
                right = n.cbr(right, w / 2, 1, 1, 1, name + ".r.pw2");
            }
            x = n.b.concat({left, right}, 1, name + ".concat");
            x = n.b.channel_shuffle(x, 2, name + ".shuffle");
        }
    x = n.cbr(x, 1024, 1, 1, 1, "mix");
    return n.b.finish({n.head(x, 1000)});
}

// depthwise 7x7, channels-last layer norm and MLP (GELU), layer scale, residual; LN + 2x2/2 downsampling
graph::Graph convnext_like(std::int64_t res, std::vector<std::int64_t> widths, int depth) {
    B n(dnncost::concat("probe:dw7-ln-mlp-r", res));
    int x = n.b.input("input", {1, 3, res, res});
    auto chan_ln = [&](int v, const std::string& nm) {  // LN over channels of NCHW via NHWC
        v = n.b.transpose(v, {0, 2, 3, 1}, nm + ".to_nhwc");
        v = n.b.layer_norm(v, nm + ".ln");
        return n.b.transpose(v, {0, 3, 1, 2}, nm + ".to_nchw");
    };
    x = n.b.conv(x, spaces::ConvSpec{widths[0], {4, 4}, {4, 4}, {}, 1, true}, "stem.conv");
    x = chan_ln(x, "stem");
    for (std::size_t s = 0; s < widths.size(); ++s) {
        if (s > 0) {
            x = chan_ln(x, dnncost::concat("down", s));
            x = n.b.conv(x, spaces::ConvSpec{widths[s], {2, 2}, {2, 2}, {}, 1, true},
                         dnncost::concat("down", s, ".conv"));
        }
        for (int d = 0; d < depth; ++d) {
            const auto name = dnncost::concat("s", s, "b", d);
            const auto w = widths[s];
            int y = n.b.conv(x, spaces::ConvSpec{w, {7, 7}, {1, 1}, {3, 3, 3, 3}, w, true}, name + ".dw");
            y = n.b.transpose(y, {0, 2, 3, 1}, name + ".to_nhwc");
            y = n.b.layer_norm(y, name + ".ln");
            y = spaces::gelu(n.b, n.b.linear(y, 4 * w, name + ".fc1"), true, name + ".gelu");
            y = n.b.linear(y, w, name + ".fc2");
            y = n.b.mul(y, n.b.weight(name + ".gamma", {w}), name + ".scale");
            y = n.b.transpose(y, {0, 3, 1, 2}, name + ".to_nchw");
            x = n.b.add(x, y, name + ".add");
        }
    }
    x = n.b.reduce_mean(x, {2, 3}, false, "head.pool");
    x = n.b.layer_norm(x, "head.ln");
    return n.b.finish({n.b.gemm(x, 1000, "classifier")});
}

// a large strided stem, unpadded pooling, and a head of two wide hidden layers
graph::Graph wide_head(std::int64_t res, std::int64_t hidden) {
    B n(dnncost::concat("probe:wide-head-r", res));
    int x = n.b.input("input", {1, 3, res, res});
    x = n.b.unary("Relu", n.b.conv(x, spaces::ConvSpec{48, {11, 11}, {4, 4}, {2, 2, 2, 2}, 1, true}, "c1"), "c1.relu");
    x = n.b.max_pool(x, 3, 2, 0, "p1");
    x = n.b.unary("Relu", n.b.conv(x, spaces::ConvSpec{128, {5, 5}, {1, 1}, {2, 2, 2, 2}, 1, true}, "c2"), "c2.relu");
    x = n.b.max_pool(x, 3, 2, 0, "p2");
    for (int i = 3; i <= 5; ++i)
        x = n.b.unary("Relu",
                      n.b.conv(x, spaces::ConvSpec{i == 5 ? 192 : 256, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1, true},
                               dnncost::concat("c", i)),
                      dnncost::concat("c", i, ".relu"));
    x = n.b.max_pool(x, 3, 2, 0, "p5");
    x = n.b.flatten(x, "flatten");
    x = n.b.unary("Relu", n.b.gemm(x, hidden, "fc1"), "fc1.relu");
    x = n.b.unary("Relu", n.b.gemm(x, hidden, "fc2"), "fc2.relu");
    return n.b.finish({n.b.gemm(x, 1000, "fc3")});
}

// pre-activation: BN, ReLU, then the convolution (densely connected growth by concatenation)
graph::Graph preact_dense(std::int64_t res, std::int64_t growth, int layers) {
    B n(dnncost::concat("probe:preact-dense-r", res));
    int x = n.b.input("input", {1, 3, res, res});
    x = n.cbr(x, 64, 7, 2, 1, "stem");
    x = n.b.max_pool(x, 3, 2, 1, "stem.pool");
    for (int blk = 0; blk < 3; ++blk) {
        std::vector<int> feats{x};
        for (int l = 0; l < layers; ++l) {
            const auto name = dnncost::concat("d", blk, "l", l);
            int in = feats.size() == 1 ? feats[0] : n.b.concat(feats, 1, name + ".cat");
            int y = n.b.unary("Relu", n.b.batch_norm(in, name + ".bn1"), name + ".relu1");
            y = n.b.conv(y, 4 * growth, 1, 1, 1, name + ".conv1");
            y = n.b.unary("Relu", n.b.batch_norm(y, name + ".bn2"), name + ".relu2");
            y = n.b.conv(y, growth, 3, 1, 1, name + ".conv2");
            feats.push_back(y);
        }
        x = n.b.concat(feats, 1, dnncost::concat("d", blk, ".out"));
        if (blk < 2) {
            const auto c = n.b.shape(x)[1] / 2;
            x = n.b.unary("Relu", n.b.batch_norm(x, dnncost::concat("t", blk, ".bn")),
                          dnncost::concat("t", blk, ".relu"));
            x = n.b.conv(x, c, 1, 1, 1, dnncost::concat("t", blk, ".conv"));
            const auto sh = n.b.shape(x);
            x = n.b.op("AveragePool", dnncost::concat("t", blk, ".pool"), {x}, {sh[0], sh[1], sh[2] / 2, sh[3] / 2},
                       {{"kernel_shape", I({2, 2})}, {"strides", I({2, 2})}});
        }
    }
    x = n.b.unary("Relu", n.b.batch_norm(x, "final.bn"), "final.relu");
    return n.b.finish({n.head(x, 1000)});
}

int main(int argc, char** argv) try {
    if (argc != 2) {
        std::cerr << "usage: dnncost_construct_probes OUT_DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    std::ofstream tsv(dir + "/networks.tsv");
    std::vector<graph::Graph> gs;
    gs.push_back(grouped(224, 4, 0.5, {256, 512, 1024, 2048}, 1));
    gs.push_back(grouped(160, 8, 1.0, {64, 128, 256, 512}, 2));
    gs.push_back(grouped(192, 16, 0.5, {128, 256, 512, 1024}, 1));
    gs.push_back(grouped(128, 24, 1.0, {72, 168, 408, 912}, 1));
    gs.push_back(shuffle(224, {116, 232, 464}));
    gs.push_back(shuffle(160, {176, 352, 704}));
    gs.push_back(convnext_like(224, {96, 192, 384, 768}, 1));
    gs.push_back(convnext_like(128, {64, 128, 256, 512}, 2));
    gs.push_back(wide_head(224, 4096));
    gs.push_back(wide_head(160, 2048));
    gs.push_back(preact_dense(224, 32, 4));
    gs.push_back(preact_dense(128, 24, 6));
    int i = 0;
    for (auto& g : gs) {
        char name[32];
        std::snprintf(name, sizeof name, "%02d.onnx", i++);
        measure::write_model_for_runner(g, dir + "/" + name, 1, 17);
        tsv << name << '\t' << g.name() << '\n';
    }
    return 0;
} catch (const std::exception& e) {
    std::cerr << "dnncost_construct_probes: " << e.what() << '\n';
    return 1;
}
