#include "checkpoint.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace trainer {
namespace fs = std::filesystem;
namespace {

constexpr char kShardMagic[8] = {'C', 'H', 'T', 'R', 'S', 'H', 'D', '1'};
constexpr const char* kManifestHead = "chorus-train checkpoint 1";

struct ShardHeader {
  char magic[8];
  uint64_t step;
  uint32_t rank, nranks;
  uint64_t offset, count;
  uint32_t crc;  // CRC-32 of the floats
  uint32_t reserved;
};

uint32_t crcOf(const void* data, size_t bytes) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), static_cast<const Bytef*>(data), bytes));
}

std::string stepDirName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

std::string shardName(int rank, int nranks) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(nranks) + ".bin";
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void fsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail("open " + path);
  ::fsync(fd);
  ::close(fd);
}

// tmp file, write, fsync, rename, fsync the directory.
void writeAtomically(const std::string& path, const void* a, size_t aBytes, const void* b,
                     size_t bBytes) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create " + tmp);
  for (auto [data, bytes] : {std::pair{a, aBytes}, std::pair{b, bBytes}}) {
    const char* p = static_cast<const char*>(data);
    for (size_t done = 0; done < bytes;) {
      ssize_t n = ::write(fd, p + done, bytes - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        fail("write " + tmp);
      }
      done += static_cast<size_t>(n);
    }
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync " + tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename " + tmp);
  fsyncPath(fs::path(path).parent_path().string());
}

bool readHeader(const std::string& path, ShardHeader& h) {
  std::ifstream in(path, std::ios::binary);
  return in.read(reinterpret_cast<char*>(&h), sizeof h) &&
         std::memcmp(h.magic, kShardMagic, sizeof kShardMagic) == 0;
}

std::string manifestBody(const CheckpointMeta& m, const std::vector<ShardHeader>& shards) {
  std::ostringstream out;
  out << kManifestHead << "\nstep " << m.step << "\nnranks " << m.nranks << "\nfloats " << m.floats
      << "\nmodel " << m.model << "\ntime " << std::to_string(m.wallTime) << "\nsampler "
      << m.sampler.rng << ' ' << m.sampler.epoch << ' ' << m.sampler.cursor << ' '
      << m.sampler.order.size() << "\norder";
  for (uint32_t i : m.sampler.order) out << ' ' << i;
  out << '\n';
  for (const ShardHeader& h : shards)
    out << "shard " << h.rank << ' ' << h.offset << ' ' << h.count << ' ' << h.crc << ' '
        << shardName(static_cast<int>(h.rank), static_cast<int>(h.nranks)) << '\n';
  return out.str();
}

// Parses and verifies a manifest; throws a reason.
CheckpointMeta parseManifest(const std::string& text, std::vector<ShardHeader>& shards) {
  const size_t last = text.rfind("crc32 ");
  if (last == std::string::npos || (last > 0 && text[last - 1] != '\n'))
    throw std::runtime_error("manifest has no checksum line (torn?)");
  const std::string body = text.substr(0, last);
  if (std::to_string(crcOf(body.data(), body.size())) + "\n" != text.substr(last + 6))
    throw std::runtime_error("manifest checksum mismatch");
  std::istringstream in(body);
  std::string line, word;
  std::getline(in, line);
  if (line != kManifestHead) throw std::runtime_error("not a chorus-train manifest");
  CheckpointMeta m;
  size_t orderSize = 0;
  while (in >> word) {
    if (word == "step")
      in >> m.step;
    else if (word == "nranks")
      in >> m.nranks;
    else if (word == "floats")
      in >> m.floats;
    else if (word == "model")
      in >> m.model;
    else if (word == "time")
      in >> m.wallTime;
    else if (word == "sampler")
      in >> m.sampler.rng >> m.sampler.epoch >> m.sampler.cursor >> orderSize;
    else if (word == "order") {
      m.sampler.order.resize(orderSize);
      for (uint32_t& i : m.sampler.order) in >> i;
    } else if (word == "shard") {
      ShardHeader h{};
      std::string file;
      in >> h.rank >> h.offset >> h.count >> h.crc >> file;
      h.nranks = static_cast<uint32_t>(m.nranks);
      shards.push_back(h);
    } else {
      throw std::runtime_error("manifest: unknown entry '" + word + "'");
    }
    if (!in) throw std::runtime_error("manifest: bad entry '" + word + "'");
  }
  if (static_cast<int>(shards.size()) != m.nranks)
    throw std::runtime_error("manifest lists too few shards");
  return m;
}

std::vector<std::pair<int64_t, fs::path>> stepDirs(const std::string& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("step-", 0) == 0)
      out.emplace_back(std::strtoll(name.c_str() + 5, nullptr, 10), e.path());
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace

Checkpointer::Checkpointer(std::string dir, int rank, int nranks, int keep, bool async,
                           Timeline& timeline, uint64_t stateFloats)
    : dir_(std::move(dir)),
      rank_(rank),
      nranks_(nranks),
      keep_(std::max(1, keep)),
      async_(async),
      timeline_(timeline) {
  fs::create_directories(dir_);
  spare_.assign(stateFloats * (rank + 1) / nranks - stateFloats * rank / nranks, 0.0f);
  if (async_) writer_ = std::thread([this] { loop(); });
}

Checkpointer::~Checkpointer() {
  stop_ = true;
  wake_.release();
  if (writer_.joinable()) writer_.join();
}

double Checkpointer::save(const CheckpointMeta& meta, std::span<const float> params,
                          std::span<const float> optimizer) {
  const auto start = Clock::now();
  const uint64_t n = params.size() + optimizer.size();
  const Source source{params, optimizer, n * rank_ / nranks_, n * (rank_ + 1) / nranks_};
  if (!async_) {
    Job job{meta, source.lo, std::move(spare_)};
    snapshot(source, job.slice);
    write(job);
    spare_ = std::move(job.slice);  // reused by the next save, as the async path does
  } else {
    // No lock the writer takes: it runs at a low priority and, preempted while holding
    // one, would hold up training (the pause used to show such waits of tens of ms).
    busy_.wait(true, std::memory_order_acquire);  // one write at a time
    if (failed_.load(std::memory_order_acquire)) {
      std::lock_guard lock(mutex_);
      throw std::runtime_error(error_);
    }
    // The writer leaves job_ and spare_ alone while not busy.
    job_.emplace();
    job_->slice = std::move(spare_);
    job_->meta = meta;
    job_->offset = source.lo;
    source_ = source;  // the writer copies it before anything else
    snapshotPending_.store(true, std::memory_order_relaxed);
    busy_.store(true, std::memory_order_release);
    wake_.release();
  }
  const auto end = Clock::now();
  timeline_.add(Timeline::kMain, "checkpoint pause", start, end);
  return seconds(end - start);
}

void Checkpointer::snapshot(const Source& s, std::vector<float>& out) {
  const auto start = Clock::now();
  out.resize(s.hi - s.lo);  // [lo, hi) of params ++ optimizer
  for (uint64_t i = s.lo; i < s.hi;) {
    const bool inParams = i < s.params.size();
    const float* from = inParams ? s.params.data() + i : s.optimizer.data() + (i - s.params.size());
    const uint64_t stop = inParams ? std::min<uint64_t>(s.hi, s.params.size()) : s.hi;
    std::copy(from, from + (stop - i), out.data() + (i - s.lo));
    i = stop;
  }
  lastSnapshot_ = seconds(Clock::now() - start);
  timeline_.add(async_ ? Timeline::kWriter : Timeline::kMain, "snapshot", start, Clock::now());
}

double Checkpointer::awaitSnapshot() {
  if (!async_) return 0;
  const auto start = Clock::now();
  snapshotPending_.wait(true, std::memory_order_acquire);
  const auto end = Clock::now();
  if (end - start > std::chrono::microseconds(20))
    timeline_.add(Timeline::kMain, "checkpoint pause (snapshot)", start, end);
  return seconds(end - start);
}

void Checkpointer::drain() {
  std::unique_lock lock(mutex_);
  const bool done = changed_.wait_for(lock, std::chrono::seconds(120), [this] {
    return !busy_.load(std::memory_order_acquire) && owed_.empty();
  });
  if (!error_.empty()) throw std::runtime_error(error_);
  if (!done)
    throw std::runtime_error("checkpoint step " + std::to_string(owed_.front().step) +
                             ": some rank's shard never appeared");
}

void Checkpointer::loop() {
  // Below the training thread: on busy cores the write must not take the CPU from it
  // (a thread's own nice value, Linux).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  for (;;) {
    // Poll for owed manifests every few ms; otherwise sleep until there is a job.
    if (owedCount_ == 0)
      wake_.acquire();
    else
      (void)wake_.try_acquire_for(std::chrono::milliseconds(5));
    const bool busy = busy_.load(std::memory_order_acquire);
    if (stop_ && !busy) return;
    std::string error;
    if (busy) {
      if (snapshotPending_.load(std::memory_order_relaxed)) {  // training waits for it
        snapshot(source_, job_->slice);
        snapshotPending_.store(false, std::memory_order_release);
        snapshotPending_.notify_all();
      }
      try {
        write(*job_);
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (error.empty() && rank_ == 0) {
        std::lock_guard lock(mutex_);
        owed_.push_back(job_->meta);
        owedCount_ = owed_.size();
      }
      spare_ = std::move(job_->slice);
      job_.reset();
      busy_.store(false, std::memory_order_release);
      busy_.notify_all();
    }
    std::unique_lock lock(mutex_);
    for (size_t i = 0; i < owed_.size() && error.empty();) {
      const CheckpointMeta meta = owed_[i];
      lock.unlock();
      bool written = false;
      try {
        written = completeManifest(meta, false);
      } catch (const std::exception& e) {
        error = e.what();
      }
      lock.lock();
      if (written)
        owed_.erase(owed_.begin() + static_cast<long>(i));
      else
        ++i;
    }
    if (!error.empty() && error_.empty()) error_ = error, failed_ = true;
    if (!error.empty()) owed_.clear();
    owedCount_ = owed_.size();
    lock.unlock();  // taken after busy_ changed: a drain() between its check and wait sees it
    changed_.notify_all();
  }
}

void Checkpointer::write(const Job& job) {
  const auto start = Clock::now();
  const std::string stepDir = dir_ + "/" + stepDirName(job.meta.step);
  fs::create_directories(stepDir);
  ShardHeader h{};
  std::memcpy(h.magic, kShardMagic, sizeof kShardMagic);
  h.step = static_cast<uint64_t>(job.meta.step);
  h.rank = static_cast<uint32_t>(rank_);
  h.nranks = static_cast<uint32_t>(nranks_);
  h.offset = job.offset;
  h.count = job.slice.size();
  h.crc = crcOf(job.slice.data(), job.slice.size() * sizeof(float));
  writeAtomically(stepDir + "/" + shardName(rank_, nranks_), &h, sizeof h, job.slice.data(),
                  job.slice.size() * sizeof(float));
  if (rank_ == 0 && !async_) completeManifest(job.meta, true);
  const auto end = Clock::now();
  lastWrite_ = seconds(end - start);
  lastStep_ = job.meta.step;
  timeline_.add(Timeline::kWriter, "checkpoint write step " + std::to_string(job.meta.step), start,
                end);
}

bool Checkpointer::completeManifest(const CheckpointMeta& meta, bool wait) {
  // Every shard must be on disk (renamed into place) before the manifest names it.
  const std::string stepDir = dir_ + "/" + stepDirName(meta.step);
  std::vector<ShardHeader> shards(nranks_);
  const auto giveUp = Clock::now() + std::chrono::seconds(120);
  for (int r = 0; r < nranks_; ++r) {
    const std::string path = stepDir + "/" + shardName(r, nranks_);
    while (!readHeader(path, shards[r]) || shards[r].step != static_cast<uint64_t>(meta.step)) {
      if (!wait) return false;
      if (cancelled_ || Clock::now() > giveUp)
        throw std::runtime_error("checkpoint step " + std::to_string(meta.step) +
                                 ": shard of rank " + std::to_string(r) + " never appeared");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const auto start = Clock::now();
  const std::string body = manifestBody(meta, shards);
  const std::string text = body + "crc32 " + std::to_string(crcOf(body.data(), body.size())) + "\n";
  writeAtomically(stepDir + "/manifest.txt", text.data(), text.size(), nullptr, 0);
  prune();
  timeline_.add(Timeline::kWriter, "manifest step " + std::to_string(meta.step), start,
                Clock::now());
  return true;
}

void Checkpointer::prune() {
  int good = 0;
  for (const auto& [step, path] : stepDirs(dir_)) {
    const bool complete = fs::exists(path / "manifest.txt");
    if (good >= keep_) {  // older than the newest `keep` complete ones
      std::error_code ec;
      fs::remove_all(path, ec);
    } else {
      good += complete;
    }
  }
}

std::optional<LoadedCheckpoint> Checkpointer::loadNewest(const std::string& dir,
                                                         const std::string& model, FILE* log) {
  for (const auto& [step, path] : stepDirs(dir)) {
    try {
      std::ifstream in(path / "manifest.txt", std::ios::binary);
      if (!in) throw std::runtime_error("no manifest (incomplete)");
      std::stringstream text;
      text << in.rdbuf();
      std::vector<ShardHeader> shards;
      LoadedCheckpoint c;
      c.meta = parseManifest(text.str(), shards);
      if (c.meta.model != model)
        throw std::runtime_error("made by another model or optimizer (" + c.meta.model + ")");
      c.state.resize(c.meta.floats);
      for (const ShardHeader& want : shards) {
        const std::string file =
            (path / shardName(static_cast<int>(want.rank), c.meta.nranks)).string();
        std::ifstream shard(file, std::ios::binary);
        ShardHeader h{};
        if (!shard.read(reinterpret_cast<char*>(&h), sizeof h) ||
            std::memcmp(h.magic, kShardMagic, sizeof kShardMagic) != 0)
          throw std::runtime_error(file + ": missing or not a shard");
        if (h.offset != want.offset || h.count != want.count || h.crc != want.crc ||
            h.step != static_cast<uint64_t>(c.meta.step) || h.offset + h.count > c.meta.floats)
          throw std::runtime_error(file + ": header disagrees with the manifest");
        if (!shard.read(reinterpret_cast<char*>(c.state.data() + h.offset),
                        h.count * sizeof(float)))
          throw std::runtime_error(file + ": truncated");
        if (crcOf(c.state.data() + h.offset, h.count * sizeof(float)) != h.crc)
          throw std::runtime_error(file + ": checksum mismatch (corrupt)");
        if (shard.peek() != std::char_traits<char>::eof())
          throw std::runtime_error(file + ": trailing bytes");
      }
      c.path = path.string();
      return c;
    } catch (const std::exception& e) {
      if (log)
        std::fprintf(log, "chorus-train: checkpoint %s rejected: %s\n", path.c_str(), e.what());
    }
  }
  return std::nullopt;
}

}  // namespace trainer
