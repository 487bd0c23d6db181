#include "model/safetensors_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_checkpoint_writer.h"

namespace hichat::model {
namespace {

using testing::make_tensor;
using testing::safetensors_image;
using testing::test_value;
using testing::write_file;

// A safetensors image with a hand-written header (length prefix computed from it).
std::string raw_image(const std::string& header, const std::string& data, uint64_t header_length) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((header_length >> (8 * i)) & 0xff);
    return out + header + data;
}

class SafetensorsFileTest : public ::testing::Test {
protected:
    std::string write(const std::string& bytes) {
        std::string path = dir_.path() + "/t.safetensors";
        write_file(path, bytes);
        return path;
    }

    // Opens bytes, expects failure and a message naming the file and each of `words`.
    Status open_error(const std::string& bytes, const std::vector<std::string>& words) {
        std::string path = write(bytes);
        Result<std::unique_ptr<SafetensorsFile>> f = SafetensorsFile::open(path);
        EXPECT_FALSE(f.ok());
        if (f.ok()) return ok_status();
        EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();
        for (const std::string& w : words) {
            EXPECT_NE(f.status().message().find(w), std::string::npos) << "'" << w << "' not in " << f.status().message();
        }
        return f.status();
    }

    testing::TempDir dir_;
};

TEST_F(SafetensorsFileTest, ReadsBf16F16F32InPlace) {
    std::vector<testing::TensorData> tensors = {make_tensor("b.weight", "BF16", {3, 5}),
                                                make_tensor("a.weight", "F16", {7}),
                                                make_tensor("c.bias", "F32", {2, 1, 2})};
    std::string path = write(safetensors_image(tensors));
    Result<std::unique_ptr<SafetensorsFile>> f = SafetensorsFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    const SafetensorsFile& file = **f;
    ASSERT_EQ(file.tensors().size(), 3u);
    EXPECT_EQ(file.tensors()[0].name, "a.weight");  // sorted by name
    EXPECT_EQ(file.find("missing"), nullptr);

    const SafetensorsTensor* b = file.find("b.weight");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, DType::kBF16);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{3, 5}));
    EXPECT_EQ(b->num_bytes, 30u);
    uint16_t h;
    std::memcpy(&h, static_cast<const char*>(b->data) + 2 * 13, 2);
    EXPECT_EQ(bf16_to_f32(h), test_value("b.weight", 13));

    const SafetensorsTensor* a = file.find("a.weight");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->dtype, DType::kF16);
    std::memcpy(&h, static_cast<const char*>(a->data) + 2 * 6, 2);
    EXPECT_EQ(f16_to_f32(h), test_value("a.weight", 6));

    const SafetensorsTensor* c = file.find("c.bias");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->dtype, DType::kF32);
    float v;
    std::memcpy(&v, static_cast<const char*>(c->data) + 4 * 3, 4);
    EXPECT_EQ(v, test_value("c.bias", 3));
    // Views into one mapping, laid out as written (b first, then a).
    EXPECT_EQ(static_cast<const char*>(b->data) + b->num_bytes, static_cast<const char*>(a->data));
}

TEST_F(SafetensorsFileTest, MissingFile) {
    Result<std::unique_ptr<SafetensorsFile>> f = SafetensorsFile::open(dir_.path() + "/nope.safetensors");
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
    EXPECT_NE(f.status().message().find("nope.safetensors"), std::string::npos);
}

TEST_F(SafetensorsFileTest, TruncatedData) {
    std::string bytes = safetensors_image({make_tensor("x", "F32", {4}), make_tensor("y", "BF16", {8})});
    bytes.resize(bytes.size() - 3);
    Status s = open_error(bytes, {"'y'", "truncated"});
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
}

TEST_F(SafetensorsFileTest, TruncatedHeader) {
    std::string bytes = safetensors_image({make_tensor("x", "F32", {4})});
    EXPECT_EQ(open_error(bytes.substr(0, 20), {"header length"}).code(), StatusCode::kDataLoss);
    EXPECT_EQ(open_error(bytes.substr(0, 5), {"too short"}).code(), StatusCode::kDataLoss);
    EXPECT_EQ(open_error("", {"too short"}).code(), StatusCode::kDataLoss);
}

TEST_F(SafetensorsFileTest, BadHeaderLength) {
    std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    open_error(raw_image(header, "abcd", uint64_t{1} << 40), {"header length 1099511627776"});
    open_error(raw_image(header, "abcd", ~uint64_t{0}), {"header length"});
    // Too short: the JSON is cut off.
    open_error(raw_image(header, "abcd", header.size() - 3), {"bad JSON"});
}

TEST_F(SafetensorsFileTest, UnsupportedDtypeNamesTensor) {
    std::string header = R"({"pos.ids":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})";
    Status s = open_error(raw_image(header, std::string(16, '\0'), header.size()), {"'pos.ids'", "F64"});
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

TEST_F(SafetensorsFileTest, OffsetsInconsistentWithShape) {
    std::string header = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})";
    open_error(raw_image(header, std::string(16, '\0'), header.size()), {"'w'", "12 bytes", "16"});
    header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})";
    open_error(raw_image(header, std::string(16, '\0'), header.size()), {"'w'", "out of order"});
    header = R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
    open_error(raw_image(header, std::string(4, '\0'), header.size()), {"'w'", "dimension"});
    header = R"({"w":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,4]}})";
    open_error(raw_image(header, std::string(4, '\0'), header.size()), {"'w'", "overflows"});
    header = R"({"w":{"dtype":"F32","shape":[1]}})";
    open_error(raw_image(header, std::string(4, '\0'), header.size()), {"'w'", "data_offsets"});
}

TEST_F(SafetensorsFileTest, BadHeaderJson) {
    std::string header = "{not json}";
    open_error(raw_image(header, "", header.size()), {"bad JSON"});
    header = "[1,2,3]";
    open_error(raw_image(header, "", header.size()), {"not a JSON object"});
}

}  // namespace
}  // namespace hichat::model
