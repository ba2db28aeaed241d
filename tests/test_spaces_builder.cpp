// NetworkBuilder's composite operators against hand-computed shapes and attributes.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include <dnncost/spaces/builder.hpp>

using namespace dnncost;
using spaces::NetworkBuilder;

TEST_CASE("channel_shuffle: Reshape to groups, swap the channel axes, Reshape back") {
    NetworkBuilder b("shuffle");
    const int x = b.input("input", {1, 12, 7, 5});
    const int y = b.channel_shuffle(x, 3, "s");
    const auto g = b.finish({y});
    CHECK(g.tensor(y).shape == graph::Shape{1, 12, 7, 5});
    CHECK(g.num_nodes() == 3);
    CHECK(g.node(g.find_node("s.split")).op_type == "Reshape");
    CHECK(g.tensor(g.find_tensor("s.split:0")).shape == graph::Shape{1, 3, 4, 7, 5});
    CHECK(g.node(g.find_node("s.swap")).attr_ints("perm") == std::vector<std::int64_t>{0, 2, 1, 3, 4});
    CHECK(g.tensor(g.find_tensor("s.swap:0")).shape == graph::Shape{1, 4, 3, 7, 5});
    CHECK(g.node(g.find_node("s.merge")).op_type == "Reshape");

    NetworkBuilder bad("shuffle");
    const int z = bad.input("input", {1, 10, 4, 4});
    CHECK_THROWS_WITH_AS(bad.channel_shuffle(z, 3, "odd"), doctest::Contains("'odd'"), shape_error);
    const int flat = bad.input("flat", {1, 12});
    CHECK_THROWS_AS(bad.channel_shuffle(flat, 2, "flat.shuffle"), shape_error);
}

TEST_CASE("max_pool: floor rounding, pads written only when given") {
    NetworkBuilder b("pool");
    const int x = b.input("input", {1, 8, 112, 55});
    const int stem = b.max_pool(x, 3, 2, 1, "stem");  // (112 + 2 - 3) / 2 + 1 = 56, (55 + 2 - 3) / 2 + 1 = 28
    const int alex = b.max_pool(x, 3, 2, 0, "alex");  // (112 - 3) / 2 + 1 = 55, (55 - 3) / 2 + 1 = 27
    const int half = b.max_pool(x, 2, 2, std::nullopt, "half");  // 56, 27: the odd column is dropped
    const auto g = b.finish({stem, alex, half});
    CHECK(g.tensor(stem).shape == graph::Shape{1, 8, 56, 28});
    CHECK(g.tensor(alex).shape == graph::Shape{1, 8, 55, 27});
    CHECK(g.tensor(half).shape == graph::Shape{1, 8, 56, 27});
    CHECK(g.node(g.find_node("stem")).attr_ints("pads") == std::vector<std::int64_t>{1, 1, 1, 1});
    CHECK(g.node(g.find_node("alex")).attr_ints("pads") == std::vector<std::int64_t>{0, 0, 0, 0});
    CHECK_FALSE(g.node(g.find_node("half")).has_attr("pads"));
    CHECK(g.node(g.find_node("half")).attr_ints("kernel_shape") == std::vector<std::int64_t>{2, 2});
    CHECK(g.node(g.find_node("half")).attr_ints("strides") == std::vector<std::int64_t>{2, 2});

    NetworkBuilder small("pool");
    const int one = small.input("input", {1, 8, 1, 1});
    CHECK_THROWS_WITH_AS(small.max_pool(one, 2, 2, std::nullopt, "head.pool"), doctest::Contains("'head.pool'"),
                         shape_error);
    const int map = small.input("map", {1, 8, 6, 6});
    CHECK_THROWS_WITH_AS(small.max_pool(map, 0, 1, std::nullopt, "empty"), doctest::Contains("kernel 0"), shape_error);
    CHECK_THROWS_WITH_AS(small.max_pool(map, 2, 0, std::nullopt, "still"), doctest::Contains("stride 0"), shape_error);
    CHECK_THROWS_WITH_AS(small.max_pool(map, 2, 2, -1, "negative"), doctest::Contains("padding -1"), shape_error);
}
