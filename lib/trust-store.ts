/**
 * The trust store narwhal's long-running processes (the router, the attestation sidecars) load TLS roots
 * from. narwhal builds a new httpx client for every engine identity read: each answer of a sidecar
 * (`/health`, `/attestation`, `/residency`, which the router asks for every engine every monitor
 * interval) and each identity check of the router. With neither `SSL_CERT_FILE` nor `SSL_CERT_DIR` set,
 * httpx parses certifi's whole CA bundle for each client: about 30 ms of CPU against 2 ms with the host's
 * hashed CA directory (narwhal-inference 0.7.0, httpx 0.29, OpenSSL 3), which made the sidecars the
 * largest CPU user of a fleet's hosts between measurements. The directory still verifies TLS through the
 * host's own roots; an operator's own setting of either variable is kept.
 */
export const TRUST_STORE_SH = `if [ -z "\${SSL_CERT_FILE:-}" ] && [ -z "\${SSL_CERT_DIR:-}" ] && [ -d /etc/ssl/certs ]; then export SSL_CERT_DIR=/etc/ssl/certs; fi`;
