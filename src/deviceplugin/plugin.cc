#include "deviceplugin/plugin.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fmt/format.h"
#include "grpcpp/grpcpp.h"

namespace muster::deviceplugin {

using namespace std::chrono_literals;

class DevicePluginServer::Service final : public v1beta1::DevicePlugin::Service {
 public:
  Service(ResourceDevices resource, std::vector<gpu::GpuDevice> gpus, PluginConfig config,
          PluginOptions options)
      : resource_(std::move(resource)),
        gpus_(std::move(gpus)),
        config_(std::move(config)),
        options_(std::move(options)),
        socket_path_(options_.dir + "/" + resource_.socket_name) {
    if (!options_.log) options_.log = StderrLog();
  }
  ~Service() override { Stop(); }

  absl::Status Serve() {
    unlink(socket_path_.c_str());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) {
      return absl::UnavailableError(
          fmt::format("cannot serve {} on {}", resource_.name, socket_path_));
    }
    // Dial our own socket, as NVIDIA's plugin does, so that a socket nobody can reach is found
    // here rather than by the kubelet.
    auto channel = grpc::CreateChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + 5s)) {
      Stop();
      return absl::UnavailableError(
          fmt::format("{} does not answer on {}", resource_.name, socket_path_));
    }
    options_.log(fmt::format("serving {} ({} devices) on {}", resource_.name,
                             resource_.devices.size(), socket_path_));
    return absl::OkStatus();
  }

  absl::Status Register(const std::string& kubelet_socket) {
    auto channel =
        grpc::CreateChannel("unix:" + kubelet_socket, grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    v1beta1::RegisterRequest request;
    request.set_version("v1beta1");
    request.set_endpoint(resource_.socket_name);
    request.set_resource_name(resource_.name);
    request.mutable_options()->set_get_preferred_allocation_available(true);
    request.mutable_options()->set_pre_start_required(false);
    v1beta1::Empty response;
    grpc::Status status = stub->Register(&context, request, &response);
    if (!status.ok()) {
      return absl::UnavailableError(fmt::format("registering {} with the kubelet at {} failed: {}",
                                                resource_.name, kubelet_socket,
                                                status.error_message()));
    }
    options_.log(fmt::format("registered {} with the kubelet at {}", resource_.name,
                             kubelet_socket));
    return absl::OkStatus();
  }

  void SetHealth(const std::map<std::string, bool>& healthy_by_uuid) {
    std::lock_guard<std::mutex> lock(mu_);
    bool changed = false;
    for (AdvertisedDevice& device : resource_.devices) {
      auto it = healthy_by_uuid.find(device.uuid);
      if (it == healthy_by_uuid.end() || it->second == device.healthy) continue;
      device.healthy = it->second;
      changed = true;
    }
    if (changed) {
      ++version_;
      cv_.notify_all();
    }
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      cv_.notify_all();
    }
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + 2s);
      server_->Wait();
      server_.reset();
    }
    unlink(socket_path_.c_str());
  }

  ResourceDevices Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return resource_;
  }

  const std::string& resource_name() const { return resource_.name; }
  const std::string& socket_path() const { return socket_path_; }

  // --- v1beta1.DevicePlugin ---

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* options) override {
    options->set_get_preferred_allocation_available(true);
    options->set_pre_start_required(false);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    uint64_t sent = 0;
    bool first = true;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_ && !context->IsCancelled()) {
      if (first || version_ != sent) {
        v1beta1::ListAndWatchResponse response = ListLocked();
        sent = version_;
        first = false;
        lock.unlock();
        if (!writer->Write(response)) return grpc::Status::OK;  // the kubelet went away
        lock.lock();
        continue;
      }
      cv_.wait_for(lock, 250ms);
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& container : request->container_requests()) {
      std::vector<std::string> available(container.available_deviceids().begin(),
                                         container.available_deviceids().end());
      std::vector<std::string> must(container.must_include_deviceids().begin(),
                                    container.must_include_deviceids().end());
      auto chosen = PreferredAllocation(resource_, gpus_, config_, available, must,
                                        container.allocation_size());
      if (!chosen.ok()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            std::string(chosen.status().message()));
      }
      auto* out = response->add_container_responses();
      for (const std::string& id : *chosen) out->add_deviceids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& container : request->container_requests()) {
      std::vector<std::string> ids(container.devices_ids().begin(), container.devices_ids().end());
      auto allocation = deviceplugin::Allocate(resource_, config_, ids, options_.environment);
      if (!allocation.ok()) {
        options_.log(std::string(allocation.status().message()));
        grpc::StatusCode code = absl::IsInvalidArgument(allocation.status())
                                    ? grpc::StatusCode::INVALID_ARGUMENT
                                    : grpc::StatusCode::FAILED_PRECONDITION;
        return grpc::Status(code, std::string(allocation.status().message()));
      }
      auto* out = response->add_container_responses();
      for (const auto& [key, value] : allocation->envs) (*out->mutable_envs())[key] = value;
      for (const auto& [key, value] : allocation->annotations) {
        (*out->mutable_annotations())[key] = value;
      }
      for (const MountSpec& mount : allocation->mounts) {
        auto* m = out->add_mounts();
        m->set_container_path(mount.container_path);
        m->set_host_path(mount.host_path);
        m->set_read_only(mount.read_only);
      }
      for (const DeviceNodeSpec& spec : allocation->devices) {
        auto* d = out->add_devices();
        d->set_container_path(spec.container_path);
        d->set_host_path(spec.host_path);
        d->set_permissions(spec.permissions);
      }
      for (const std::string& name : allocation->cdi_devices) out->add_cdi_devices()->set_name(name);
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  v1beta1::ListAndWatchResponse ListLocked() const {
    v1beta1::ListAndWatchResponse response;
    for (const AdvertisedDevice& device : resource_.devices) {
      auto* d = response.add_devices();
      d->set_id(device.id);
      d->set_health(device.healthy ? "Healthy" : "Unhealthy");
      if (device.numa_node >= 0) d->mutable_topology()->add_nodes()->set_id(device.numa_node);
    }
    return response;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  ResourceDevices resource_;  // guarded by mu_
  const std::vector<gpu::GpuDevice> gpus_;
  const PluginConfig config_;
  PluginOptions options_;
  const std::string socket_path_;
  uint64_t version_ = 0;  // guarded by mu_; bumped on every change of the list
  bool stopped_ = false;  // guarded by mu_
  std::unique_ptr<grpc::Server> server_;
};

DevicePluginServer::DevicePluginServer(std::unique_ptr<Service> service)
    : service_(std::move(service)) {}

DevicePluginServer::~DevicePluginServer() { Stop(); }

absl::StatusOr<std::unique_ptr<DevicePluginServer>> DevicePluginServer::Start(
    ResourceDevices resource, std::vector<gpu::GpuDevice> gpus, PluginConfig config,
    PluginOptions options) {
  auto service = std::make_unique<Service>(std::move(resource), std::move(gpus),
                                           std::move(config), std::move(options));
  if (auto s = service->Serve(); !s.ok()) return s;
  return std::unique_ptr<DevicePluginServer>(new DevicePluginServer(std::move(service)));
}

absl::Status DevicePluginServer::Register(const std::string& kubelet_socket) {
  return service_->Register(kubelet_socket);
}

void DevicePluginServer::SetHealth(const std::map<std::string, bool>& healthy_by_uuid) {
  service_->SetHealth(healthy_by_uuid);
}

void DevicePluginServer::Stop() { service_->Stop(); }

const std::string& DevicePluginServer::resource_name() const { return service_->resource_name(); }
const std::string& DevicePluginServer::socket_path() const { return service_->socket_path(); }
ResourceDevices DevicePluginServer::Snapshot() const { return service_->Snapshot(); }

}  // namespace muster::deviceplugin
