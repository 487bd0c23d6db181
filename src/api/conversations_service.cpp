#include "api/conversations_service.h"

#include "api/responses_request.h"

namespace hichat::api {
namespace {

using Json = nlohmann::json;

Json conversation_json(const session::StoredConversation& c) {
    Json metadata = Json::parse(c.metadata_json, nullptr, false);
    return {{"id", c.id}, {"object", "conversation"}, {"created_at", c.created_at},
            {"metadata", metadata.is_object() ? metadata : Json::object()}};
}

ApiError no_conversation(const std::string& id) {
    return not_found_error("conversation_id", "no conversation " + id + " exists");
}

std::vector<session::ConversationItem> new_items(const std::vector<InputMessage>& messages) {
    std::vector<session::ConversationItem> items;
    for (const InputMessage& m : messages) {
        const std::string id = new_object_id("msg");
        items.push_back({.item_id = id, .item_json = message_item_json(id, m).dump(-1, ' ', false, Json::error_handler_t::replace)});
    }
    return items;
}

Json items_list(const std::vector<session::ConversationItem>& items, bool has_more) {
    Json data = Json::array();
    for (const auto& item : items) data.push_back(Json::parse(item.item_json, nullptr, false));
    Json list = {{"object", "list"}, {"data", data}};
    list["first_id"] = items.empty() ? Json(nullptr) : Json(items.front().item_id);
    list["last_id"] = items.empty() ? Json(nullptr) : Json(items.back().item_id);
    list["has_more"] = has_more;
    return list;
}

}  // namespace

bool ConversationsService::check_id(SessionJob& job, const std::string& id) {
    if (is_valid_object_id(id, "conv")) return true;
    job.reply_error(bad_field("conversation_id", "conversation_id must be a conversation id (conv_...), got \"" + id + "\""));
    return false;
}

void ConversationsService::reply_conversation(SessionJob& job, const std::string& id) {
    auto conv = store_->get_conversation(job.owner(), id);
    if (!conv.ok()) return job.reply_error(store_error(conv.status().message()));
    if (!conv->has_value()) return job.reply_error(no_conversation(id));
    job.reply(200, conversation_json(**conv));
}

void ConversationsService::create(SessionJob& job) {
    ConversationRequest r;
    if (auto e = parse_conversation_request(std::move(job.request.body), false, r)) return job.reply_error(*e);
    session::StoredConversation c{.id = new_object_id("conv"), .owner = job.owner(),
                                  .metadata_json = r.metadata.value_or(Json::object()).dump()};
    if (Status s = store_->put_conversation(c); !s.ok()) return job.reply_error(store_error(s.message()));
    if (!r.items.empty()) {
        auto appended = store_->append_items(job.owner(), c.id, new_items(r.items));
        if (!appended.ok()) return job.reply_error(store_error(appended.status().message()));
    }
    reply_conversation(job, c.id);
}

void ConversationsService::retrieve(SessionJob& job, const std::string& id) {
    if (check_id(job, id)) reply_conversation(job, id);
}

void ConversationsService::update(SessionJob& job, const std::string& id) {
    if (!check_id(job, id)) return;
    ConversationRequest r;
    if (auto e = parse_conversation_request(std::move(job.request.body), true, r)) return job.reply_error(*e);
    auto updated = store_->update_conversation(job.owner(), id, r.metadata->dump(), std::nullopt);
    if (!updated.ok()) return job.reply_error(store_error(updated.status().message()));
    if (!*updated) return job.reply_error(no_conversation(id));
    reply_conversation(job, id);
}

void ConversationsService::remove(SessionJob& job, const std::string& id) {
    if (!check_id(job, id)) return;
    auto deleted = store_->delete_conversation(job.owner(), id);
    if (!deleted.ok()) return job.reply_error(store_error(deleted.status().message()));
    if (!*deleted) return job.reply_error(no_conversation(id));
    job.reply(200, {{"id", id}, {"object", "conversation.deleted"}, {"deleted", true}});
}

void ConversationsService::create_items(SessionJob& job, const std::string& id) {
    if (!check_id(job, id)) return;
    std::vector<InputMessage> messages;
    if (auto e = parse_items_request(std::move(job.request.body), messages)) return job.reply_error(*e);
    std::vector<session::ConversationItem> items = new_items(messages);
    auto appended = store_->append_items(job.owner(), id, items);
    if (!appended.ok()) return job.reply_error(store_error(appended.status().message()));
    if (!*appended) return job.reply_error(no_conversation(id));
    job.reply(200, items_list(items, false));
}

void ConversationsService::list_items(SessionJob& job, const std::string& id) {
    if (!check_id(job, id)) return;
    ListQuery q;
    if (auto e = parse_list_query(job.request.query, q)) return job.reply_error(*e);
    auto list = store_->list_items(job.owner(), id,
                                   {.after = q.after, .limit = q.limit,
                                    .order = q.ascending ? session::ItemOrder::kAscending : session::ItemOrder::kDescending});
    if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
        return job.reply_error(bad_field("after", list.status().message()));
    }
    if (!list.ok()) return job.reply_error(store_error(list.status().message()));
    if (!list->has_value()) return job.reply_error(no_conversation(id));
    job.reply(200, items_list((*list)->items, (*list)->has_more));
}

void ConversationsService::retrieve_item(SessionJob& job, const std::string& id, const std::string& item_id) {
    if (!check_id(job, id)) return;
    auto item = store_->get_item(job.owner(), id, item_id);
    if (!item.ok()) return job.reply_error(store_error(item.status().message()));
    if (!item->has_value()) return job.reply_error(not_found_error("item_id", "no item " + item_id + " in conversation " + id));
    job.writer->send(200, "application/json", (*item)->item_json);
}

// Deleting an item changes the history: the conversation's stored token ids no longer match it.
void ConversationsService::delete_item(SessionJob& job, const std::string& id, const std::string& item_id) {
    if (!check_id(job, id)) return;
    auto deleted = store_->delete_item(job.owner(), id, item_id);
    if (!deleted.ok()) return job.reply_error(store_error(deleted.status().message()));
    if (!*deleted) return job.reply_error(not_found_error("item_id", "no item " + item_id + " in conversation " + id));
    auto cleared = store_->update_conversation(job.owner(), id, std::nullopt, std::string("{}"));
    if (!cleared.ok()) return job.reply_error(store_error(cleared.status().message()));
    reply_conversation(job, id);
}

}  // namespace hichat::api
