// parse_multipart_form against bodies as undici (the openai SDK's fetch) and curl write them, and the
// malformed ones it must refuse by name.
#include <gtest/gtest.h>

#include "api/http/multipart_form.h"

namespace hichat::api {
namespace {

std::string sdk_body(const std::string& boundary, const std::string& file_bytes) {
    return "--" + boundary + "\r\n" +
           "Content-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n" +
           "--" + boundary + "\r\n" +
           "Content-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n" +
           "Content-Type: application/jsonl\r\n\r\n" + file_bytes + "\r\n" +
           "--" + boundary + "--\r\n";
}

TEST(MultipartBoundary, ReadsPlainAndQuotedParameters) {
    EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=----formdata-undici-0123"), "----formdata-undici-0123");
    EXPECT_EQ(multipart_boundary("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c");
    EXPECT_EQ(multipart_boundary("multipart/form-data; charset=utf-8; boundary=xyz"), "xyz");
    EXPECT_EQ(multipart_boundary("application/json"), std::nullopt);
    EXPECT_EQ(multipart_boundary("multipart/form-data"), std::nullopt);
    EXPECT_EQ(multipart_boundary("multipart/form-data; boundary="), std::nullopt);
    EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'b')), std::nullopt);
}

TEST(MultipartForm, ParsesFieldsAndFileWithCrlfAndDashesInside) {
    const std::string file = "{\"a\":1}\r\n{\"b\":\"--x\"}\n\r\n--not-the-boundary\r\n";
    const std::string body = sdk_body("----formdata-undici-0123", file);
    auto parts = parse_multipart_form(body, "----formdata-undici-0123");
    ASSERT_TRUE(parts.ok()) << parts.status().message();
    ASSERT_EQ(parts->size(), 2u);
    EXPECT_EQ((*parts)[0].name, "purpose");
    EXPECT_EQ((*parts)[0].data, "batch");
    EXPECT_FALSE((*parts)[0].filename.has_value());
    const MultipartPart* f = find_part(*parts, "file");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->filename, "in.jsonl");
    EXPECT_EQ(f->content_type, "application/jsonl");
    EXPECT_EQ(f->data, file);
    EXPECT_EQ(find_part(*parts, "other"), nullptr);
}

TEST(MultipartForm, PreambleEmptyPartAndEscapedFilename) {
    const std::string body = "preamble text\r\n--B\r\n"
                             "content-disposition: form-data; name=\"file\"; filename=\"a\\\"b.jsonl\"\r\n\r\n"
                             "\r\n--B--";
    auto parts = parse_multipart_form(body, "B");
    ASSERT_TRUE(parts.ok()) << parts.status().message();
    ASSERT_EQ(parts->size(), 1u);
    EXPECT_EQ((*parts)[0].filename, "a\"b.jsonl");
    EXPECT_EQ((*parts)[0].data, "");
}

TEST(MultipartForm, RefusesMalformedBodiesNamingTheProblem) {
    auto no_boundary = parse_multipart_form("hello", "B");
    ASSERT_FALSE(no_boundary.ok());
    EXPECT_NE(no_boundary.status().message().find("boundary does not occur"), std::string::npos);

    auto unterminated = parse_multipart_form("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nxyz", "B");
    ASSERT_FALSE(unterminated.ok());
    EXPECT_NE(unterminated.status().message().find("closing boundary"), std::string::npos);

    auto no_name = parse_multipart_form("--B\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B--", "B");
    ASSERT_FALSE(no_name.ok());
    EXPECT_NE(no_name.status().message().find("no name"), std::string::npos);

    auto no_disposition = parse_multipart_form("--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--", "B");
    ASSERT_FALSE(no_disposition.ok());
    EXPECT_NE(no_disposition.status().message().find("no Content-Disposition"), std::string::npos);

    auto headers_never_end = parse_multipart_form("--B\r\nContent-Disposition: form-data; name=\"a\"", "B");
    ASSERT_FALSE(headers_never_end.ok());
    EXPECT_NE(headers_never_end.status().message().find("headers never end"), std::string::npos);
}

}  // namespace
}  // namespace hichat::api
