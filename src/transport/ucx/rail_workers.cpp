#include "transport/ucx/rail_workers.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace loom {
namespace {

constexpr const char *kTcpSegmentSize = "64k";

std::mutex registry_mutex;
std::map<std::string, std::weak_ptr<RailWorkers>> &registry() {
    static std::map<std::string, std::weak_ptr<RailWorkers>> r;
    return r;
}
uint32_t comm_ids = 1;

Status ucx_error(ucs_status_t s, const std::string &what) {
    return fail(LOOM_ERR_TRANSPORT, what + ": " + ucs_status_string(s));
}

Status make_worker(Rail &rail, std::shared_ptr<RailWorker> *out) {
    RailsLock lock(rails_mutex());
    auto w = std::make_shared<RailWorker>();
    ucp_worker_params_t wp = {};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    ucs_status_t s = ucp_worker_create(rail.context, &wp, &w->handle);
    if (s != UCS_OK) return ucx_error(s, "rail " + rail.device + ": creating a UCP worker");
    rail.all.push_back(w);
    // A waiting rank sleeps on it; without one it polls (UCX says why not in its log).
    if (ucp_worker_get_efd(w->handle, &w->efd) != UCS_OK) w->efd = -1;
    ucp_address_t *address = nullptr;
    size_t length = 0;
    s = ucp_worker_get_address(w->handle, &address, &length);
    if (s != UCS_OK) return ucx_error(s, "rail " + rail.device + ": reading the worker's address");
    w->address.assign(reinterpret_cast<const char *>(address), length);
    ucp_worker_release_address(w->handle, address);
    rail.current = w;
    *out = w;
    return LOOM_SUCCESS;
}

Status make_rail(const std::string &device, const std::string &tls, Rail *out) {
    out->device = device;
    ucp_config_t *config = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
    if (s != UCS_OK) return ucx_error(s, "rail " + device + ": reading UCX's configuration");
    // Never "all": loopback and bridges reachable from every host confuse
    // UCX's reachability, and one device per context is what keeps a rail a rail.
    s = ucp_config_modify(config, "NET_DEVICES", device.c_str());
    if (s == UCS_OK && !tls.empty()) s = ucp_config_modify(config, "TLS", tls.c_str());
    // Keepalive rounds wake idle workers for nothing.
    if (s == UCS_OK) ucp_config_modify(config, "KEEPALIVE_INTERVAL", "inf");
    // UCX's TCP transport moves data in segments of 8 KiB, a system call
    // each; larger ones keep a rail's stream fuller (docs/performance.md).
    // A user's own UCX_TCP_TX_SEG_SIZE / UCX_TCP_RX_SEG_SIZE wins. The
    // transport's keys go without their TCP_ prefix: UCP hands them to
    // every transport's configuration, where only tcp's has these.
    for (const char *key : {"TX_SEG_SIZE", "RX_SEG_SIZE"})
        if (s == UCS_OK && !std::getenv((std::string("UCX_TCP_") + key).c_str()))
            ucp_config_modify(config, key, kTcpSegmentSize);
    if (s != UCS_OK) {
        ucp_config_release(config);
        return ucx_error(s, "rail " + device + ": setting UCX's NET_DEVICES/TLS (ucx_tls = '" + tls + "')");
    }
    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    s = ucp_init(&params, config, &out->context);
    ucp_config_release(config);
    if (s != UCS_OK)
        return ucx_error(s, "rail " + device + ": UCX found no usable transport on device '" + device +
                                "' with ucx_tls = '" + tls + "'");
    std::shared_ptr<RailWorker> first;
    return make_worker(*out, &first);
}

void close_endpoint(ucp_worker_h worker, ucp_ep_h ep) {
    RailsLock lock(rails_mutex());
    // Forced: at the end of a job the peer may be gone already.
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void *req = ucp_ep_close_nbx(ep, &param);
    if (!UCS_PTR_IS_PTR(req)) return;
    for (int i = 0; i < 1000000 && ucp_request_check_status(req) == UCS_INPROGRESS; ++i) ucp_worker_progress(worker);
    ucp_request_free(req);
}

}  // namespace

Status RailWorkers::get(const std::vector<std::string> &devices, const std::string &tls,
                        std::shared_ptr<RailWorkers> *out, bool shared) {
    std::string key = tls;
    for (const std::string &d : devices) key += "|" + d;
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (!shared) key.clear();
    if (auto existing = shared ? registry()[key].lock() : nullptr) {
        *out = existing;
        return LOOM_SUCCESS;
    }
    std::shared_ptr<RailWorkers> made(new RailWorkers);
    made->rails_.resize(devices.size());
    for (size_t i = 0; i < devices.size(); ++i)
        LOOM_RETURN_IF_ERROR(make_rail(devices[i], tls, &made->rails_[i]));
    if (shared) registry()[key] = made;
    *out = made;
    return LOOM_SUCCESS;
}

std::recursive_mutex &rails_mutex() {
    static std::recursive_mutex *m = new std::recursive_mutex;  // never destroyed: used until exit
    return *m;
}

RailWorkers::~RailWorkers() {
    RailsLock lock(rails_mutex());
    for (Rail &r : rails_) {
        // A failed worker still holds requests abandoned on it, which UCX
        // would report one by one: such a rail's workers and context are left
        // to the end of the process.
        bool failed = false;
        for (auto &w : r.all) failed |= w->down;
        if (failed) continue;
        for (auto &w : r.all) {
            for (auto &e : w->endpoints) close_endpoint(w->handle, e.second);
            if (w->handle) ucp_worker_destroy(w->handle);
        }
        if (r.context) ucp_cleanup(r.context);
    }
}

Status RailWorkers::renew(size_t rail, std::shared_ptr<RailWorker> *out) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    return make_worker(rails_[rail], out);
}

Status RailWorkers::endpoint(size_t rail, RailWorker &w, const std::string &remote_address, ucp_ep_h *out) {
    auto it = w.endpoints.find(remote_address);
    if (it != w.endpoints.end()) {
        *out = it->second;
        return LOOM_SUCCESS;
    }
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t *>(remote_address.data());
    ucp_ep_h ep = nullptr;
    RailsLock lock(rails_mutex());
    const ucs_status_t s = ucp_ep_create(w.handle, &params, &ep);
    if (s != UCS_OK) return ucx_error(s, "rail " + rails_[rail].device + ": connecting to a peer's worker");
    w.endpoints.emplace(remote_address, ep);
    *out = ep;
    return LOOM_SUCCESS;
}

uint32_t RailWorkers::next_comm_id() {
    std::lock_guard<std::mutex> lock(registry_mutex);
    return comm_ids;
}

void RailWorkers::reserve_comm_id(uint32_t id) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    comm_ids = std::max(comm_ids, id + 1);
}

}  // namespace loom
