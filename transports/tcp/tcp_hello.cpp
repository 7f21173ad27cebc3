#include "transports/tcp/tcp_hello.hpp"

#include "settings/settings.hpp"

#include <charconv>
#include <cstring>

namespace chorus::tcp {

std::vector<uint8_t> encodeHello(const Hello& hello) {
  std::vector<uint8_t> bytes(sizeof(hello));
  std::memcpy(bytes.data(), &hello, sizeof(hello));
  return bytes;
}

std::optional<Hello> decodeHello(std::span<const uint8_t> context) {
  Hello hello{};
  if (context.size() != sizeof(hello)) return std::nullopt;
  std::memcpy(&hello, context.data(), sizeof(hello));
  if (hello.magic != kHelloMagic) return std::nullopt;
  return hello;
}

std::vector<Nic> parseNics(const std::string& text) {
  std::vector<Nic> nics;
  for (const std::string& item : settings::splitList(text)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos) throwInvalid("tcp: bad address list '" + text + "' in the store");
    nics.push_back({item.substr(0, eq), item.substr(eq + 1)});
  }
  if (nics.empty()) throwInvalid("tcp: empty address list in the store");
  return nics;
}

std::pair<std::string, uint16_t> splitHostPort(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) throwInvalid("tcp: bad address '" + text + "' in the store");
  // Not std::stoul: it throws std::invalid_argument on garbage and takes a port over 65535
  // modulo 2^16.
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [end, error] = std::from_chars(first, last, port);
  if (error != std::errc() || end != last || first == last || port == 0 || port > 65535)
    throwInvalid("tcp: bad port in address '" + text + "' in the store");
  return {text.substr(0, colon), static_cast<uint16_t>(port)};
}

net::SocketAddress parseAddress(const std::string& text) {
  auto [host, port] = splitHostPort(text);
  return net::SocketAddress::parse(host, port);
}

}  // namespace chorus::tcp
