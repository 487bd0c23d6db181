// BlockHash: the prefix-cache key of one full KV block, a SHA-256 chain over the token ids of every
// block up to and including it: H(parent, tokens). The chain's root takes in the request's cache salt
// (length-prefixed), so two salts never give the same key for any block. A cryptographic hash, because
// a match is key equality alone: with a weak hash a client could plant a collision and read another
// prompt's KV.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace hichat::kv {

struct BlockHash {
    std::array<uint8_t, 32> bytes{};
    bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
    size_t operator()(const BlockHash& h) const {
        size_t v = 0;
        std::memcpy(&v, h.bytes.data(), sizeof v);  // already uniform
        return v;
    }
};

// The parent of a sequence's block 0.
BlockHash root_block_hash(std::string_view cache_salt);
// The key of a full block whose predecessor's key is `parent`.
BlockHash chain_block_hash(const BlockHash& parent, std::span<const int32_t> tokens);

}  // namespace hichat::kv
