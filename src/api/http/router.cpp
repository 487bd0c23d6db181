#include "api/http/router.h"

#include <exception>
#include <utility>

#include "api/http/http_error.h"
#include "base/check.h"

namespace hichat::api {
namespace {

bool matches(const std::string& route_path, bool is_prefix, const std::string& path) {
    if (!is_prefix) return route_path == path;
    return path.size() > route_path.size() && path.compare(0, route_path.size(), route_path) == 0;
}

void run_handler(const Handler& handler, HttpRequest& request, const std::shared_ptr<ResponseWriter>& writer) {
    std::string error;
    try {
        handler(request, writer);
        return;
    } catch (const std::exception& e) {
        error = e.what();
    } catch (...) {
        error = "unknown exception";
    }
    if (!writer->response_started()) send_error(*writer, 500, "internal error: " + error, "internal_error");
}

}  // namespace

void Router::add(std::string method, std::string path, Handler handler) {
    CHECK(!method.empty() && !path.empty() && path[0] == '/') << "Router::add: bad route " << method << " " << path;
    CHECK(handler) << "Router::add: empty handler for " << path;
    std::string pattern = path;
    bool is_prefix = path.size() >= 2 && path.compare(path.size() - 2, 2, "/*") == 0;
    if (is_prefix) path.pop_back();  // keep the '/' so "/v1/models/*" does not match "/v1/modelsX"
    for (Route& route : routes_) {
        if (route.method == method && route.path == path && route.is_prefix == is_prefix) {
            route.handler = std::move(handler);
            return;
        }
    }
    routes_.push_back(Route{std::move(method), std::move(pattern), std::move(path), is_prefix, std::move(handler)});
}

std::vector<const Router::Route*> Router::routes_for_path(const std::string& path) const {
    const Route* best = nullptr;
    for (const Route& route : routes_) {
        if (!matches(route.path, route.is_prefix, path)) continue;
        bool better = best == nullptr || (best->is_prefix && !route.is_prefix) ||
                      (best->is_prefix && route.is_prefix && route.path.size() > best->path.size());
        if (better) best = &route;
    }
    std::vector<const Route*> out;
    if (best == nullptr) return out;
    for (const Route& route : routes_) {
        if (route.path == best->path && route.is_prefix == best->is_prefix) out.push_back(&route);
    }
    return out;
}

std::string_view Router::dispatch(HttpRequest request, const std::shared_ptr<ResponseWriter>& writer) const {
    std::vector<const Route*> candidates = routes_for_path(request.path);
    if (candidates.empty()) {
        send_error(*writer, 404, "no route for " + request.method + " " + request.path, "unknown_url");
        return {};
    }
    const std::string_view pattern = candidates.front()->pattern;
    const Route* get_route = nullptr;
    for (const Route* route : candidates) {
        if (route->method == request.method) {
            run_handler(route->handler, request, writer);
            return pattern;
        }
        if (route->method == "GET") get_route = route;
    }
    if (request.method == "HEAD" && get_route != nullptr) {
        run_handler(get_route->handler, request, writer);
        return pattern;
    }
    std::string allow;
    for (const Route* route : candidates) allow += route->method + ", ";
    allow += "OPTIONS";
    if (request.method == "OPTIONS") {
        writer->send(204, "", "", {{"Allow", allow}});
        return pattern;
    }
    writer->send(405, "application/json",
                 error_json("method " + request.method + " not allowed for " + request.path + " (allowed: " +
                                allow + ")",
                            kInvalidRequestError, "method_not_allowed"),
                 {{"Allow", allow}});
    return pattern;
}

}  // namespace hichat::api
