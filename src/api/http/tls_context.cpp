#include "api/http/tls_context.h"

#include <fstream>

#include <openssl/ssl.h>

namespace hichat::api {
namespace {

namespace ssl = boost::asio::ssl;

Status check_readable(const std::string& path, const char* field) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return not_found(std::string(field) + " '" + path + "': cannot open file");
    return ok_status();
}

}  // namespace

Result<std::unique_ptr<ssl::context>> make_tls_context(const std::string& cert_file, const std::string& key_file) {
    HICHAT_RETURN_IF_ERROR(check_readable(cert_file, "tls_cert_file"));
    HICHAT_RETURN_IF_ERROR(check_readable(key_file, "tls_key_file"));
    std::unique_ptr<ssl::context> context;
    try {
        context = std::make_unique<ssl::context>(ssl::context::tls_server);
    } catch (const boost::system::system_error& e) {
        return Status(StatusCode::kInternal, std::string("cannot create TLS context: ") + e.what());
    }
    boost::system::error_code ec;
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                             ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                         ec);
    if (ec) return Status(StatusCode::kInternal, "cannot set TLS options: " + ec.message());
    context->use_certificate_chain_file(cert_file, ec);
    if (ec) {
        return invalid_argument("tls_cert_file '" + cert_file + "': not a PEM certificate chain (" + ec.message() + ")");
    }
    context->use_private_key_file(key_file, ssl::context::pem, ec);
    if (ec) return invalid_argument("tls_key_file '" + key_file + "': not a PEM private key (" + ec.message() + ")");
    if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
        return invalid_argument("tls_key_file '" + key_file + "' does not match the certificate in tls_cert_file '" +
                                cert_file + "'");
    }
    return context;
}

}  // namespace hichat::api
