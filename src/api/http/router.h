// Router: maps (method, path) to a Handler; answers 404 / 405 / 500 itself.
//
// Threads: add() only before the router is handed to HttpServer::start(); dispatch() is const and
// runs concurrently on the I/O threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/http/http_request.h"
#include "api/http/response_writer.h"

namespace hichat::api {

// Runs on an I/O thread: it must not block. Long work (generation) keeps the writer and answers
// from another thread. Exceptions escaping a handler become a 500 if no response was started.
// The request is the handler's to take from (e.g. move the body to another thread): the server
// drops it when the handler returns. A handler that only reads it may take `const HttpRequest&`.
using Handler = std::function<void(HttpRequest& request, std::shared_ptr<ResponseWriter> writer)>;

class Router {
public:
    // `path` is either exact ("/v1/models") or a prefix ending in "/*" ("/v1/models/*") that matches
    // every longer path below it. Exact routes win, then the longest prefix. A HEAD request falls
    // back to the GET handler (the server drops the body). Adding the same method+path twice
    // replaces the handler.
    void add(std::string method, std::string path, Handler handler);

    // Runs the handler for request.method + request.path, or answers itself: 404 (no route for the
    // path), 405 (path known, method not; with an Allow header), OPTIONS without a route of its own:
    // 204 with Allow. Returns the pattern of the matched path as given to add() ("/v1/models/*"),
    // "" for a 404; the view lives as long as the router.
    std::string_view dispatch(HttpRequest request, const std::shared_ptr<ResponseWriter>& writer) const;

private:
    struct Route {
        std::string method;
        std::string pattern;  // as given to add()
        std::string path;  // without the trailing "*" for prefix routes
        bool is_prefix = false;
        Handler handler;
    };

    // Routes whose path matches `path`, best match first (all share one path).
    std::vector<const Route*> routes_for_path(const std::string& path) const;

    std::vector<Route> routes_;
};

}  // namespace hichat::api
