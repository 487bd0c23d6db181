// CHECK macros for broken invariants (style rule 10): print file, line and values, then abort.
// Never for user input: that gets a Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace hichat::detail {

class CheckFailure {
public:
    CheckFailure(const char* file, int line, const char* cond) {
        stream_ << file << ":" << line << ": CHECK failed: " << cond << " ";
    }
    [[noreturn]] ~CheckFailure() {
        std::fprintf(stderr, "%s\n", stream_.str().c_str());
        std::fflush(stderr);
        std::abort();
    }
    template <typename T>
    CheckFailure& operator<<(const T& v) {
        stream_ << v;
        return *this;
    }

private:
    std::ostringstream stream_;
};

}  // namespace hichat::detail

#define CHECK(cond) \
    if (cond) {     \
    } else          \
        ::hichat::detail::CheckFailure(__FILE__, __LINE__, #cond)

#define HICHAT_CHECK_OP(a, b, op) \
    CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define CHECK_EQ(a, b) HICHAT_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) HICHAT_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) HICHAT_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) HICHAT_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) HICHAT_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) HICHAT_CHECK_OP(a, b, >=)
