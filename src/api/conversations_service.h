// ConversationsService: the Conversations API (create, retrieve, update metadata, delete; items create,
// list, retrieve, delete). Runs on a preprocessing worker (the SessionStore may wait for the disk).
// Owned by OpenAiService; the store outlives it.
#pragma once

#include <string>

#include "api/session_job.h"
#include "session/session_store.h"

namespace hichat::api {

class ConversationsService {
public:
    explicit ConversationsService(session::SessionStore* store) : store_(store) {}

    void create(SessionJob& job);
    void retrieve(SessionJob& job, const std::string& id);
    void update(SessionJob& job, const std::string& id);
    void remove(SessionJob& job, const std::string& id);
    void create_items(SessionJob& job, const std::string& id);
    void list_items(SessionJob& job, const std::string& id);
    void retrieve_item(SessionJob& job, const std::string& id, const std::string& item_id);
    void delete_item(SessionJob& job, const std::string& id, const std::string& item_id);

private:
    bool check_id(SessionJob& job, const std::string& id);  // 400 for a malformed id
    void reply_conversation(SessionJob& job, const std::string& id);

    session::SessionStore* store_;
};

}  // namespace hichat::api
