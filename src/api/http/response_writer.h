// ResponseWriter: the handle a handler uses to answer one request, now or later.
//
// Ownership: shared_ptr-owned by the handler (and whoever it passes it to, e.g. the engine's token
// sink). The connection keeps only a weak reference: if every owner drops the writer before the
// response is complete, the connection answers 500 (nothing sent yet) or cuts the stream short.
//
// Threads: every method is thread-safe and may be called from any thread, also after the server has
// shut down (calls then do nothing). Bytes are handed to the connection's I/O strand and written as
// soon as the socket takes them; nothing is buffered until the end.
//
// Use: either send() once, or start_stream(), write() any number of times, then finish().
// Calling them out of that order is a programming error (CHECK).
#pragma once

#include <any>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "api/http/exchange.h"
#include "api/http/http_request.h"
#include "api/http/response_sink.h"

namespace hichat::api {

class ResponseWriter {
public:
    // `exchange` (may be null): the exchange this writer answers; the writer is one of its parties
    // until the response is complete or the writer is dropped.
    explicit ResponseWriter(std::weak_ptr<ResponseSink> sink, std::shared_ptr<Exchange> exchange = nullptr);
    ~ResponseWriter();
    ResponseWriter(const ResponseWriter&) = delete;
    ResponseWriter& operator=(const ResponseWriter&) = delete;

    // One complete response with Content-Length. `extra` must not set Content-Length,
    // Transfer-Encoding or Connection (the server does), nor contain CR/LF. A 204 or 304 has an
    // empty body (and no Content-Length).
    void send(int status, std::string content_type, std::string body, HeaderList extra = {});

    // Starts a streamed response (chunked transfer encoding on HTTP/1.1, close-delimited on 1.0).
    void start_stream(int status, std::string content_type = "text/event-stream", HeaderList extra = {});
    // Queues one piece of the body, e.g. "data: {...}\n\n". Returns false once the client is gone
    // (the chunk is then dropped). Empty chunks are ignored.
    bool write(std::string chunk);
    // Ends the streamed response; the connection may then serve the next request.
    void finish();

    // Attaches what the exchange observer should know about this request (an access-log record,
    // say); replaces an earlier annotation. Takes effect only before the response is complete.
    void annotate(std::any annotation);

    bool response_started() const;  // send() or start_stream() was called
    bool client_gone() const { return client_gone_.load(std::memory_order_acquire); }

    // `cb` runs once, on an I/O thread, when the client disconnects (or the server force-closes the
    // connection) before the response is complete. If the client is already gone, runs `cb` now on
    // the caller's thread. Never runs after the response completed. Replaces an earlier callback.
    // `cb` must not capture this writer by shared_ptr in a way that outlives the response (the
    // writer drops the callback once the response completes, which breaks such cycles).
    void on_client_gone(std::function<void()> cb);

    // Connection side (I/O strand): the client went away / the connection is finished with this
    // writer. After detach() the writer never touches the connection again.
    void notify_client_gone();
    void detach();

private:
    enum class State { kNew, kStreaming, kDone };

    void deliver_locked(ResponsePart part);  // requires mu_
    void leave_exchange_locked();            // requires mu_

    mutable std::mutex mu_;
    std::weak_ptr<ResponseSink> sink_;      // empty once detached
    std::shared_ptr<Exchange> exchange_;    // null once the response is complete
    State state_ = State::kNew;
    std::function<void()> on_gone_;
    std::atomic<bool> client_gone_{false};
};

}  // namespace hichat::api
