// Test helpers for the webhook tests.
//
// TestReceiver: a minimal webhook receiver on Beast/Asio, listening on 127.0.0.1 (HTTP, or HTTPS
// with a certificate from make_test_certificate). One thread accepts and serves one connection at
// a time, synchronously: it reads one request, checks its Standard Webhooks signature with the
// signer it was given, asks the policy for the status to answer, answers and closes. Every request
// is recorded; wait_for() blocks until a condition over the records holds (or a deadline passes).
//
// ReportLog: collects a WebhookSender's DeliveryReports and waits for conditions over them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/webhooks/webhook_sender.h"
#include "api/webhooks/webhook_signer.h"

namespace hichat::api::webhooks::test {

constexpr std::chrono::seconds kDeadline{30};  // generous: conditions normally hold within ms

struct ReceivedRequest {
    std::string method, target, content_type;
    std::string id, timestamp, signature;  // webhook-id, webhook-timestamp, webhook-signature
    std::string body;
    std::string sni;                       // TLS only: the server name the client sent
    bool signature_ok = false;             // verified with the receiver's signer
    int num_attempt_of_id = 0;             // 1 for the first request with this webhook-id
    int answered = 0;                      // the status sent back
};

struct TestCertificate {
    std::string cert_pem, key_pem;
};
// A self-signed P-256 certificate (and CA: it is its own trust anchor) valid for an hour, with
// the given subjectAltName, e.g. "DNS:localhost,IP:127.0.0.1". Made with OpenSSL's API.
TestCertificate make_test_certificate(const std::string& subject_alt_name);

class TestReceiver {
public:
    // The status to answer a request whose signature checked out (a bad signature gets 401).
    using Policy = std::function<int(const ReceivedRequest&)>;

    // port 0: the OS picks one. nullptr (with a test failure) if it cannot listen.
    static std::unique_ptr<TestReceiver> start(Policy policy, const WebhookSigner& signer, int port = 0,
                                               std::optional<TestCertificate> tls = std::nullopt);
    ~TestReceiver();

    int port() const;
    std::string url(const std::string& host = "127.0.0.1") const;  // scheme://host:port/hook
    size_t num_connections() const;                                 // accepted so far
    std::vector<ReceivedRequest> requests() const;
    std::vector<ReceivedRequest> requests_with_id(const std::string& id) const;
    bool wait_for(const std::function<bool(const std::vector<ReceivedRequest>&)>& done) const;

private:
    struct Impl;
    explicit TestReceiver(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

class ReportLog {
public:
    DeliveryObserver observer();  // the log must outlive the sender it is given to
    std::vector<DeliveryReport> reports() const;
    std::vector<DeliveryReport> finals() const;  // every report but kRetrying
    bool wait_for(const std::function<bool(const std::vector<DeliveryReport>&)>& done) const;
    bool wait_for_finals(size_t n) const;

private:
    mutable std::mutex mu_;
    mutable std::condition_variable changed_;
    std::vector<DeliveryReport> reports_;
};

// A 127.0.0.1 port nothing listens on (bound, then closed).
int unused_port();

// A secret, and its signer, for the tests.
inline const std::string kSecret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const WebhookSigner& test_signer();

}  // namespace hichat::api::webhooks::test
