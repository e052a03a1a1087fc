#include "data/dump.hpp"
#include "model/hourglass.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

using namespace harness::data;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
    TempDir() {
        path_ =
            fs::temp_directory_path() / ("hb_dump_test_" + std::to_string(std::random_device{}()));
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

std::string file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

harness::model::HourglassSpec small_spec() {
    harness::model::HourglassSpec s;
    s.stacks = 2;
    s.features = 8;
    s.depth = 1;
    s.joints = 3;
    s.input_size = 16;
    s.batch = 2;
    return s;
}

}  // namespace

TEST(Npy, RoundTrip) {
    TempDir dir;
    const std::vector<float> data = {1.0f, -2.5f, 0x1p-24f, 3.0e38f, 0.0f, -0.0f};
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{6}, {2, 3}, {1, 2, 3, 1}, {3, 2}}) {
        const auto file = (dir.path() / "a.npy").string();
        write_npy(file, shape, data.data());
        std::vector<int64_t> read_shape;
        const auto back = read_npy(file, &read_shape);
        EXPECT_EQ(read_shape, shape);
        ASSERT_EQ(back.size(), data.size());
        EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size() * 4), 0);
    }
    const auto empty = (dir.path() / "empty.npy").string();
    write_npy(empty, {0, 4}, nullptr);
    std::vector<int64_t> shape;
    EXPECT_TRUE(read_npy(empty, &shape).empty());
    EXPECT_EQ(shape, (std::vector<int64_t>{0, 4}));
}

TEST(Npy, HeaderBytes) {
    TempDir dir;
    const float data[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    const auto file = dir.path() / "h.npy";
    write_npy(file.string(), {2, 3}, data);
    const std::string bytes = file_bytes(file);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
    EXPECT_EQ(bytes[6], '\x01');
    EXPECT_EQ(bytes[7], '\x00');
    const size_t header_len = static_cast<unsigned char>(bytes[8]) |
                              static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);
    EXPECT_EQ(bytes.size(), 10 + header_len + 6 * 4);
    const std::string header = bytes.substr(10, header_len);
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    EXPECT_EQ(header.substr(0, dict.size()), dict);
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(header.find_first_not_of(' ', dict.size()), header_len - 1);
    // 1.0f = 0x3f800000, little-endian
    EXPECT_EQ(bytes.substr(10 + header_len, 4), std::string("\x00\x00\x80\x3f", 4));

    write_npy(file.string(), {5}, data);
    EXPECT_NE(file_bytes(file).find("'shape': (5,), }"), std::string::npos);
}

TEST(Npy, RejectsOtherFormats) {
    TempDir dir;
    const auto file = dir.path() / "f8.npy";
    std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }";
    dict.append(63 - (10 + dict.size()) % 64, ' ');  // to a 64-byte boundary with the '\n'
    dict += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) +
                        '\0' + dict + std::string(8, '\0');
    std::ofstream(file, std::ios::binary) << bytes;
    EXPECT_THROW(read_npy(file.string(), nullptr), std::runtime_error);
    std::ofstream(file, std::ios::binary) << "not numpy";
    EXPECT_THROW(read_npy(file.string(), nullptr), std::runtime_error);
    EXPECT_THROW(read_npy((dir.path() / "missing.npy").string(), nullptr), std::runtime_error);
}

TEST(Dump, WritesIndexAndFiles) {
    TempDir tmp;
    const auto g = harness::model::build_hourglass(small_spec());
    const auto state = initial_state(g, 11);
    const auto batches = make_batches(g, 11, 2);
    const fs::path dir = tmp.path() / "nested" / "dump";
    hb_optimizer optimizer{};
    optimizer.variant = HB_RMSPROP_TORCH;
    optimizer.learning_rate = 2.5e-4f;
    dump(dir.string(), g, 11, state, batches, optimizer);

    std::ifstream in(dir / "index.json");
    const auto index = nlohmann::json::parse(in);
    EXPECT_EQ(index["format"], 1);
    EXPECT_EQ(index["seed"], 11u);
    EXPECT_EQ(index["optimizer"]["variant"], "torch");
    EXPECT_FLOAT_EQ(index["optimizer"]["learning_rate"].get<float>(), 2.5e-4f);
    const auto& tensors = index["tensors"];
    ASSERT_EQ(tensors.size(), g.tensors.size() + 4);
    for (size_t i = 0; i < g.tensors.size(); ++i) {
        const auto& t = g.tensors[i];
        const auto& entry = tensors[i];
        EXPECT_EQ(entry["name"], t.name);
        EXPECT_EQ(entry["file"], t.name + ".npy");
        EXPECT_EQ(entry["shape"].get<std::vector<int64_t>>(), t.shape);
        EXPECT_EQ(entry["dtype"], "float32");
        EXPECT_EQ(entry["kind"], t.trainable() ? "parameter" : "running_stat");
        EXPECT_EQ(entry["layer"], g.layers[static_cast<size_t>(t.layer)].name);
        EXPECT_EQ(entry["order"], i);
        ASSERT_TRUE(fs::exists(dir / (t.name + ".npy"))) << t.name;
    }
    EXPECT_EQ(tensors[0]["role"], "weight");
    EXPECT_EQ(tensors[1]["role"], "bias");
    EXPECT_EQ(tensors[4]["role"], "running_mean");
    const auto& input1 = tensors[g.tensors.size() + 2];
    EXPECT_EQ(input1["name"], "input.1");
    EXPECT_EQ(input1["kind"], "input");
    EXPECT_EQ(input1["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{2, 3, 16, 16}));
    EXPECT_EQ(tensors.back()["kind"], "target");
    EXPECT_EQ(tensors.back()["shape"].get<std::vector<int64_t>>(),
              (std::vector<int64_t>{2, 3, 4, 4}));

    std::vector<int64_t> shape;
    EXPECT_EQ(read_npy((dir / "pre.conv.weight.npy").string(), &shape), state[0]);
    EXPECT_EQ(shape, (std::vector<int64_t>{64, 3, 7, 7}));
    EXPECT_EQ(read_npy((dir / "target.1.npy").string(), nullptr), batches.targets[1]);

    const auto& layers = index["layers"];
    ASSERT_EQ(layers.size(), g.layers.size());
    EXPECT_EQ(layers[0]["name"], "pre.conv");
    EXPECT_EQ(layers[0]["kind"], "conv2d");
    EXPECT_EQ(layers[0]["inputs"], nlohmann::json::array({"input"}));
    EXPECT_EQ(layers[0]["kernel"], 7);
    EXPECT_EQ(layers[0]["stride"], 2);
    EXPECT_EQ(layers[0]["padding"], 3);
    EXPECT_EQ(layers[0]["weight"], "pre.conv.weight");
    EXPECT_EQ(layers[0]["output_shape"].get<std::vector<int64_t>>(),
              (std::vector<int64_t>{2, 64, 8, 8}));
    const auto merge = static_cast<size_t>(g.index_of_layer("stack0.merge"));
    EXPECT_EQ(layers[merge]["inputs"].size(), 3u);
}

TEST(Dump, RejectsMismatchedState) {
    TempDir tmp;
    const auto g = harness::model::build_hourglass(small_spec());
    auto state = initial_state(g, 1);
    state.pop_back();
    EXPECT_THROW(dump(tmp.path().string(), g, 1, state, make_batches(g, 1, 1), hb_optimizer{}),
                 std::invalid_argument);
}
