// Base64 and the Standard Webhooks signature. The expected signatures are hard-coded: computed once
// with python3's hmac, hashlib and base64 modules, independently of this code:
//   key = base64.b64decode(secret.removeprefix("whsec_"))
//   "v1," + base64.b64encode(hmac.new(key, f"{id}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()
// The first vector's inputs are the example of the Standard Webhooks reference libraries.
#include <gtest/gtest.h>

#include "api/webhooks/base64.h"
#include "api/webhooks/webhook_signer.h"

namespace hichat::api::webhooks {
namespace {

TEST(Base64, EncodesAndDecodesPythonsValues) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode(std::string("\x00\xff\xfe\x01\x02", 5)), "AP/+AQI=");
    EXPECT_EQ(base64_decode("AP/+AQI="), std::string("\x00\xff\xfe\x01\x02", 5));
    EXPECT_EQ(base64_decode("Zg=="), "f");
    EXPECT_EQ(base64_decode("Zm8="), "fo");
    EXPECT_EQ(base64_decode(""), "");
}

TEST(Base64, RefusesWhatIsNotCanonical) {
    for (const char* bad : {"Zg", "Zg=", "Z===", "Zm9v\n", "Zm 9v", "Zm9v====", "Z=g=", "Zm-_", "====", "Zg==Zg=="}) {
        EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
    }
}

TEST(WebhookSigner, MatchesVectorsComputedWithPython) {
    auto reference = WebhookSigner::from_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    ASSERT_TRUE(reference.ok()) << reference.status().message();
    EXPECT_EQ(reference->sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");

    auto ours = WebhookSigner::from_secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");  // bytes 0..31
    ASSERT_TRUE(ours.ok());
    const std::string body =
        R"({"type":"batch.completed","timestamp":"2026-01-02T03:04:05.678Z","data":{"id":"batch_1","status":"completed"}})";
    EXPECT_EQ(ours->sign("msg_0123456789abcdef0123456789abcdef", 1767323045, body),
              "v1,CMBlBCQsMko9N2CibaOT4vpC2PC93hjVsx2/YVVi6oo=");
}

TEST(WebhookSigner, PrefixIsOptional) {
    auto without = WebhookSigner::from_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    ASSERT_TRUE(without.ok());
    EXPECT_EQ(without->sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
              "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSigner, RefusesBadSecretsWithoutEchoingThem) {
    for (const char* bad : {"", "whsec_", "whsec_not base64!", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMU",  // 21 bytes
                            "whsec_QUJD"}) {
        auto signer = WebhookSigner::from_secret(bad);
        ASSERT_FALSE(signer.ok()) << bad;
        EXPECT_NE(signer.status().message().find("webhook secret"), std::string::npos);
        const std::string key_text = std::string(bad).substr(std::min<size_t>(6, std::string(bad).size()));
        if (key_text.size() > 2) {
            EXPECT_EQ(signer.status().message().find(key_text), std::string::npos);
        }
    }
    const std::string too_long = "whsec_" + base64_encode(std::string(65, 'k'));
    EXPECT_FALSE(WebhookSigner::from_secret(too_long).ok());
    EXPECT_TRUE(WebhookSigner::from_secret("whsec_" + base64_encode(std::string(64, 'k'))).ok());
}

class VerifyTest : public ::testing::Test {
protected:
    const WebhookSigner signer_ = WebhookSigner::from_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").value();
    const std::string id_ = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const std::string body_ = R"({"test": 2432232314})";
    const int64_t ts_ = 1614265330;
    const std::string sig_ = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
};

TEST_F(VerifyTest, AcceptsTheSignature) {
    EXPECT_TRUE(signer_.verify(id_, std::to_string(ts_), sig_, body_, ts_).ok());
    EXPECT_TRUE(signer_.verify(id_, std::to_string(ts_), sig_, body_, ts_ + 300).ok());  // edge of the window
    // A list with an old key's signature or another version first (key rotation).
    EXPECT_TRUE(signer_.verify(id_, std::to_string(ts_), "v1,AAAA v1a,xyz " + sig_, body_, ts_).ok());
}

TEST_F(VerifyTest, RejectsTamperedBodyIdTimestampOrSignature) {
    const std::string ts = std::to_string(ts_);
    EXPECT_FALSE(signer_.verify(id_, ts, sig_, R"({"test": 2432232315})", ts_).ok());
    EXPECT_FALSE(signer_.verify(id_, ts, sig_, body_ + " ", ts_).ok());
    EXPECT_FALSE(signer_.verify("msg_p5jXN8AQM9LWM0D4loKWxJel", ts, sig_, body_, ts_).ok());
    EXPECT_FALSE(signer_.verify(id_, std::to_string(ts_ + 1), sig_, body_, ts_).ok());
    EXPECT_FALSE(signer_.verify(id_, ts, "v2," + sig_.substr(3), body_, ts_).ok());
    EXPECT_FALSE(signer_.verify(id_, ts, sig_.substr(0, sig_.size() - 2) + "A=", body_, ts_).ok());
    EXPECT_FALSE(signer_.verify(id_, ts, "", body_, ts_).ok());
    auto other_key = WebhookSigner::from_secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").value();
    EXPECT_FALSE(other_key.verify(id_, ts, sig_, body_, ts_).ok());
}

TEST_F(VerifyTest, RejectsStaleFutureAndMalformedTimestamps) {
    const std::string ts = std::to_string(ts_);
    auto stale = signer_.verify(id_, ts, sig_, body_, ts_ + 301);
    EXPECT_FALSE(stale.ok());
    EXPECT_NE(stale.message().find("webhook-timestamp"), std::string::npos) << stale.message();
    EXPECT_FALSE(signer_.verify(id_, ts, sig_, body_, ts_ - 301).ok());
    for (const char* bad : {"", "abc", "1614265330.0", " 1614265330", "1614265330x"}) {
        EXPECT_FALSE(signer_.verify(id_, bad, sig_, body_, ts_).ok()) << bad;
    }
}

TEST_F(VerifyTest, SignRoundTripsThroughVerify) {
    const std::string sig = signer_.sign("msg_x", 1700000000, "{}");
    EXPECT_EQ(sig.rfind("v1,", 0), 0u);
    EXPECT_TRUE(signer_.verify("msg_x", "1700000000", sig, "{}", 1700000010).ok());
}

}  // namespace
}  // namespace hichat::api::webhooks
