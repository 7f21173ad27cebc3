#include "security/crypto.hpp"

#include "errors.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <sys/random.h>

#include <cerrno>
#include <memory>

namespace chorus::security {
namespace {

struct FreeMac {
  void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
};
struct FreeMacContext {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};

// libcrypto frees its per-thread state when a thread ends, but only until its own exit
// handler (OPENSSL_cleanup) has run. Initialising it when libchorus loads registers that
// handler before any of Chorus's function-local statics (the process store's server and
// its thread), so at exit those threads end first and their state is freed.
const bool kCryptoInitialisedAtLoad = OPENSSL_init_crypto(0, nullptr) == 1;

[[noreturn]] void fail(const char* what) {
  throw Error(Result::SystemError, std::string("libcrypto: ") + what + " failed");
}

}  // namespace

Digest hmacSha256(Bytes key, std::initializer_list<Bytes> parts) {
  if (!kCryptoInitialisedAtLoad) fail("OPENSSL_init_crypto");
  // Fetched once: EVP_MAC_fetch looks the algorithm up in the provider tables.
  static const std::unique_ptr<EVP_MAC, FreeMac> hmac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  if (!hmac) fail("EVP_MAC_fetch(HMAC)");
  std::unique_ptr<EVP_MAC_CTX, FreeMacContext> ctx(EVP_MAC_CTX_new(hmac.get()));
  if (!ctx) fail("EVP_MAC_CTX_new");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                         OSSL_PARAM_construct_end()};
  // An empty key is a valid HMAC key; libcrypto wants a non-null pointer for it.
  static const uint8_t none = 0;
  if (EVP_MAC_init(ctx.get(), key.empty() ? &none : key.data(), key.size(), params) != 1)
    fail("EVP_MAC_init");
  for (Bytes part : parts)
    if (!part.empty() && EVP_MAC_update(ctx.get(), part.data(), part.size()) != 1)
      fail("EVP_MAC_update");
  Digest out;
  size_t length = 0;
  if (EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) != 1 || length != out.size())
    fail("EVP_MAC_final");
  ctx.reset();
  // Handshakes run on short- and long-lived threads alike (the store's server, engine and
  // progress threads that may still run at exit): free this thread's libcrypto state now
  // rather than at a thread exit that may come after libcrypto's own clean-up.
  OPENSSL_thread_stop();
  return out;
}

bool equalDigests(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void randomBytes(std::span<uint8_t> out) {
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::getrandom(out.data() + got, out.size() - got, 0);
    if (r > 0) got += size_t(r);
    if (r < 0 && errno != EINTR) throwSystemError("getrandom");
  }
}

}  // namespace chorus::security
