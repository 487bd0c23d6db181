#include "api/policy/api_key_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "common/temp_dir.h"

namespace hichat::api {
namespace {

using test_support::TempDir;

std::string hex(const Sha256Digest& d) {
    static const char* kHex = "0123456789abcdef";
    std::string s;
    for (uint8_t b : d) {
        s += kHex[b >> 4];
        s += kHex[b & 15];
    }
    return s;
}

// True when `needle` occurs anywhere in the raw bytes [data, data + size).
bool bytes_contain(const void* data, size_t size, std::string_view needle) {
    auto* begin = static_cast<const char*>(data);
    return std::search(begin, begin + size, needle.begin(), needle.end()) != begin + size;
}

// FIPS 180-2 / NIST CSRC example vectors (cross-checked with coreutils sha256sum).
TEST(Sha256Test, MatchesPublishedVectors) {
    EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(ApiKeyStoreTest, KeyIdIsPrefixOfDigest) {
    EXPECT_EQ(key_id_from_digest(sha256("abc")).value, "key-ba7816bf");
    auto store = ApiKeyStore::create({"abc"}, {});
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_EQ(store->num_keys(), 1u);
    EXPECT_EQ(store->stored_keys()[0].id.value, "key-ba7816bf");
}

TEST(ApiKeyStoreTest, EmptyStoreMeansAuthOff) {
    auto store = ApiKeyStore::create({}, {});
    ASSERT_TRUE(store.ok());
    EXPECT_TRUE(store->empty());
    EXPECT_FALSE(store->authenticate("Bearer anything").has_value());
}

TEST(ApiKeyStoreTest, AuthenticatesRightKeyOnly) {
    auto store = ApiKeyStore::create({"sk-alpha-123", "sk-beta-456"}, {});
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_FALSE(store->empty());
    KeyId alpha = key_id_from_digest(sha256("sk-alpha-123"));
    KeyId beta = key_id_from_digest(sha256("sk-beta-456"));
    EXPECT_NE(alpha, beta);

    EXPECT_EQ(store->authenticate("Bearer sk-alpha-123"), alpha);
    EXPECT_EQ(store->authenticate("Bearer sk-beta-456"), beta);
    EXPECT_EQ(store->authenticate("bearer sk-beta-456"), beta);      // scheme is case-insensitive
    EXPECT_EQ(store->authenticate("  Bearer   sk-beta-456 \t"), beta);  // optional whitespace
    EXPECT_EQ(store->authenticate("Bearer\tsk-beta-456"), beta);

    EXPECT_FALSE(store->authenticate("Bearer sk-alpha-124"));  // wrong key
    EXPECT_FALSE(store->authenticate("Bearer sk-alpha-12"));   // prefix of a key
    EXPECT_FALSE(store->authenticate("Bearer SK-ALPHA-123"));  // keys are case-sensitive
}

TEST(ApiKeyStoreTest, RejectsMissingAndMalformedHeaders) {
    auto store = ApiKeyStore::create({"sk-alpha-123"}, {});
    ASSERT_TRUE(store.ok());
    for (std::string_view header : {"", "   ", "Bearer", "Bearer ", "Bearer    ", "Bearersk-alpha-123",
                                    "Basic sk-alpha-123", "sk-alpha-123", "Token sk-alpha-123",
                                    "Bearer sk-alpha-123 extra", "Bearer sk-alpha-123\x01"}) {
        EXPECT_FALSE(store->authenticate(header).has_value()) << "header: '" << header << "'";
    }
    EXPECT_FALSE(parse_bearer_token("Bearer a b").has_value());
    EXPECT_EQ(parse_bearer_token("Bearer tok"), std::optional<std::string_view>("tok"));
}

TEST(ApiKeyStoreTest, EveryKeyOfALargeSetMapsToItsOwnId) {
    std::vector<std::string> keys;
    for (int i = 0; i < 64; ++i) keys.push_back("sk-key-number-" + std::to_string(i));
    auto store = ApiKeyStore::create(keys, {});
    ASSERT_TRUE(store.ok());
    ASSERT_EQ(store->num_keys(), keys.size());
    for (const std::string& key : keys) {
        EXPECT_EQ(store->authenticate("Bearer " + key), key_id_from_digest(sha256(key))) << key;
    }
    EXPECT_FALSE(store->authenticate("Bearer sk-key-number-64"));
}

TEST(ApiKeyStoreTest, HoldsOnlyDigestsNeverTheKey) {
    const std::string key = "sk-very-secret-plaintext-key-0123456789";
    auto store = ApiKeyStore::create({key}, {});
    ASSERT_TRUE(store.ok());
    const auto& stored = store->stored_keys();
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].digest, sha256(key));
    EXPECT_EQ(stored[0].id.value.find(key), std::string::npos);
    // Raw bytes of the store object, its entries and the id strings hold no copy of the key.
    EXPECT_FALSE(bytes_contain(&*store, sizeof(ApiKeyStore), key));
    EXPECT_FALSE(bytes_contain(stored.data(), stored.size() * sizeof(ApiKeyStore::StoredKey), key));
    EXPECT_FALSE(bytes_contain(stored[0].id.value.data(), stored[0].id.value.size(), key));
    EXPECT_FALSE(bytes_contain(stored[0].digest.data(), stored[0].digest.size(), key.substr(0, 8)));
}

TEST(ApiKeyStoreTest, DuplicateKeysCollapse) {
    auto store = ApiKeyStore::create({"sk-same", "sk-same"}, {});
    ASSERT_TRUE(store.ok());
    EXPECT_EQ(store->num_keys(), 1u);
}

TEST(ApiKeyStoreTest, ParsesKeyFileSkippingCommentsAndBlanks) {
    TempDir dir;
    std::string path = dir.write("keys.txt",
                                 "# team keys\n"
                                 "\n"
                                 "sk-file-one\r\n"
                                 "   sk-file-two   \n"
                                 "  # indented comment\n"
                                 "\t\n"
                                 "sk-file-three");  // no final newline
    auto store = ApiKeyStore::create({"sk-flag"}, {path});
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_EQ(store->num_keys(), 4u);
    for (std::string key : {"sk-flag", "sk-file-one", "sk-file-two", "sk-file-three"}) {
        EXPECT_EQ(store->authenticate("Bearer " + key), key_id_from_digest(sha256(key))) << key;
    }
    EXPECT_FALSE(store->authenticate("Bearer #"));
    EXPECT_FALSE(store->authenticate("Bearer # team keys"));
}

TEST(ApiKeyStoreTest, KeyFileErrorsNameFileAndLineButNotKey) {
    TempDir dir;
    std::string path = dir.write("bad.txt", "sk-good\n# comment\nsk-has two-words\n");
    auto store = ApiKeyStore::create({}, {path});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
    const std::string& msg = store.status().message();
    EXPECT_NE(msg.find(path + ":3"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("two-words"), std::string::npos) << msg;

    std::string nonascii = dir.write("nonascii.txt", "\n\nsk-caf\xc3\xa9\n");
    auto store2 = ApiKeyStore::create({}, {nonascii});
    ASSERT_FALSE(store2.ok());
    EXPECT_NE(store2.status().message().find(nonascii + ":3"), std::string::npos) << store2.status().message();

    std::string nul = dir.write("nul.txt", std::string("sk-a\0b\n", 7));
    auto store3 = ApiKeyStore::create({}, {nul});
    ASSERT_FALSE(store3.ok());
    EXPECT_NE(store3.status().message().find(nul + ":1"), std::string::npos) << store3.status().message();
}

TEST(ApiKeyStoreTest, MissingFileAndDirectoryAreErrorsNamingThePath) {
    TempDir dir;
    std::string missing = dir.path() + "/no-such-file.txt";
    auto store = ApiKeyStore::create({}, {missing});
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
    EXPECT_NE(store.status().message().find(missing), std::string::npos);

    auto store2 = ApiKeyStore::create({}, {dir.path()});
    ASSERT_FALSE(store2.ok());
    EXPECT_NE(store2.status().message().find(dir.path()), std::string::npos) << store2.status().message();
}

TEST(ApiKeyStoreTest, BadFlagKeyNamesTheFlag) {
    auto store = ApiKeyStore::create({"sk-ok", ""}, {});
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("--api-key #2"), std::string::npos) << store.status().message();
    auto store2 = ApiKeyStore::create({"secret with space"}, {});
    ASSERT_FALSE(store2.ok());
    EXPECT_EQ(store2.status().message().find("secret"), std::string::npos) << store2.status().message();
}

}  // namespace
}  // namespace hichat::api
