/** The trust-store line narwhal's router and sidecars start under, run by a real sh. */
import { execFileSync } from "node:child_process";
import { expect } from "chai";
import { TRUST_STORE_SH } from "../../lib/trust-store";

/** What the line leaves set, starting from exactly `env` (plus PATH). */
function after(env: Record<string, string>): { file: string; dir: string } {
  const out = execFileSync("sh", ["-c", `${TRUST_STORE_SH}\nprintf '%s\\n%s' "\${SSL_CERT_FILE-unset}" "\${SSL_CERT_DIR-unset}"`], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    encoding: "utf8",
  });
  const [file, dir] = out.split("\n");
  return { file, dir };
}

describe("trust store of narwhal's processes", () => {
  it("points httpx at the host's hashed CA directory when the operator set neither variable", () => {
    expect(after({})).to.deep.equal({ file: "unset", dir: "/etc/ssl/certs" });
  });

  it("keeps an operator's own CA file or directory", () => {
    expect(after({ SSL_CERT_FILE: "/opt/ca/bundle.pem" })).to.deep.equal({ file: "/opt/ca/bundle.pem", dir: "unset" });
    expect(after({ SSL_CERT_DIR: "/opt/ca/dir" })).to.deep.equal({ file: "unset", dir: "/opt/ca/dir" });
  });
});
