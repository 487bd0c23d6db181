#include "kv/block_hash.h"

#include <openssl/evp.h>

#include <string>

#include "base/check.h"

namespace hichat::kv {
namespace {

// Bumped whenever what a block's KV depends on changes meaning (layout, dtype), so that keys of
// different versions never meet.
constexpr std::string_view kDomain = "hichat-kv-block-v1";

class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new()) {
        CHECK(ctx_ != nullptr && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1) << "SHA-256 init failed";
    }
    ~Sha256() { EVP_MD_CTX_free(ctx_); }
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void add(const void* data, size_t size) { CHECK(EVP_DigestUpdate(ctx_, data, size) == 1); }
    void add_length(uint64_t n) { add(&n, sizeof n); }
    BlockHash finish() {
        BlockHash h;
        unsigned int size = 0;
        CHECK(EVP_DigestFinal_ex(ctx_, h.bytes.data(), &size) == 1 && size == h.bytes.size());
        return h;
    }

private:
    EVP_MD_CTX* ctx_;
};

}  // namespace

BlockHash root_block_hash(std::string_view cache_salt) {
    Sha256 sha;
    sha.add_length(kDomain.size());
    sha.add(kDomain.data(), kDomain.size());
    sha.add_length(cache_salt.size());
    sha.add(cache_salt.data(), cache_salt.size());
    return sha.finish();
}

BlockHash chain_block_hash(const BlockHash& parent, std::span<const int32_t> tokens) {
    Sha256 sha;
    sha.add(parent.bytes.data(), parent.bytes.size());
    sha.add_length(tokens.size());
    sha.add(tokens.data(), tokens.size_bytes());
    return sha.finish();
}

}  // namespace hichat::kv
