import { expect } from "chai";
import { expandIncludePattern, loadSshConfig, MAX_INCLUDE_DEPTH, type SshConfigFiles } from "../../../lib/ssh/ssh-config/load";
import { resolveSshAlias } from "../../../lib/ssh/ssh-config/resolve";

const HOME = "/fixture/home";

/** Files in memory, keyed by absolute path; folders are implied by the paths below them. */
function memoryFiles(files: Record<string, string>, unreadable: string[] = []): SshConfigFiles {
  const fail = (code: string, p: string) => Object.assign(new Error(`${code}: ${p}`), { code });
  return {
    readFile: (p) => {
      if (unreadable.includes(p)) throw fail("EACCES", p);
      if (p in files) return files[p];
      throw fail(Object.keys(files).some((f) => f.startsWith(`${p}/`)) ? "EISDIR" : "ENOENT", p);
    },
    listDir: (p) => {
      const prefix = p.endsWith("/") ? p : `${p}/`;
      const names = Object.keys(files).filter((f) => f.startsWith(prefix)).map((f) => f.slice(prefix.length).split("/")[0]);
      if (names.length === 0) throw fail(p in files ? "ENOTDIR" : "ENOENT", p);
      return [...new Set(names)];
    },
  };
}

function resolve(files: Record<string, string>, alias: string, opts: { top?: string; localUser?: string } = {}) {
  const top = opts.top ?? `${HOME}/.ssh/config`;
  const root = loadSshConfig(top, files[top], { home: HOME, files: memoryFiles(files) });
  return resolveSshAlias({ root, home: HOME, localUser: opts.localUser ?? "op" }, alias);
}

const CONFIG = `
# operators' usual layout
Host bastion
  HostName 198.18.0.11
  User jump

Host gpu-*  !gpu-legacy
  User ops
  Port 2222
  IdentityFile ~/.ssh/fleet_ed25519
  ProxyJump bastion

Host gpu-a
  HostName 198.18.0.12
  User root

Host gpu-legacy
  HostName=198.18.0.99

Host *
  User nobody
  ServerAliveInterval 30
`;

const NOTHING = { hostName: undefined, user: undefined, port: undefined, identityFile: undefined, proxyJump: undefined };

describe("ssh: ssh_config aliases", () => {
  const one = (alias: string) => resolve({ [`${HOME}/.ssh/config`]: CONFIG }, alias);

  it("takes the first obtained value, as ssh does", () => {
    expect(one("gpu-a")).to.deep.equal({
      hostName: "198.18.0.12",
      user: "ops", // the gpu-* block comes first in the file, so its User wins over gpu-a's
      port: 2222,
      identityFile: "/fixture/home/.ssh/fleet_ed25519",
      proxyJump: "bastion",
    });
  });

  it("honours negated patterns and key=value syntax", () => {
    expect(one("gpu-legacy")).to.deep.equal({ ...NOTHING, hostName: "198.18.0.99", user: "nobody" });
  });

  it("says nothing about a name no Host block names", () => {
    expect(one("198.18.0.13")).to.equal(undefined);
  });

  it("keeps a quoted argument with spaces whole and ignores a comment after the value", () => {
    const files = { [`${HOME}/.ssh/config`]: 'Host gpu-a\n  IdentityFile "~/.ssh/my keys/id"  # the lab key\n  User = ops # who\n' };
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "ops", identityFile: "/fixture/home/.ssh/my keys/id" });
  });
});

describe("ssh: ssh_config Include", () => {
  it("reads included files relative to ~/.ssh, globbed and sorted, in the place of the Include line", () => {
    const files = {
      [`${HOME}/.ssh/config`]: "Include conf.d/*.conf\nHost gpu-a\n  Port 2200\n  User late\n",
      [`${HOME}/.ssh/conf.d/20-users.conf`]: "Host gpu-*\n  User ops\n",
      [`${HOME}/.ssh/conf.d/10-hosts.conf`]: "Host gpu-a\n  HostName 198.18.0.12\n",
      [`${HOME}/.ssh/conf.d/.hidden.conf`]: "Host gpu-a\n  HostName 198.18.0.66\n",
      [`${HOME}/.ssh/conf.d/notes.txt`]: "Host gpu-a\n  HostName 198.18.0.77\n",
    };
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12", user: "ops", port: 2200 });
  });

  it("follows a chain of includes, with ~ and absolute paths, and the first value wins across files", () => {
    const files = {
      [`${HOME}/.ssh/config`]: "Host gpu-a\n  Include ~/.ssh/first\nHost *\n  User fallback\n  Port 22\n",
      [`${HOME}/.ssh/first`]: "User from-first\nInclude /etc/fleet/second\nPort 2201\n",
      "/etc/fleet/second": "HostName 198.18.0.12\nUser from-second\nPort 2202\n",
    };
    // Lines before any Host line in an included file carry the including block's state (gpu-a applies).
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12", user: "from-first", port: 2202 });
    // For another host the Host gpu-a block does not apply, so nothing included under it does.
    expect(resolve(files, "gpu-b")).to.equal(undefined);
  });

  it("ends a Host block opened inside an included file with that file", () => {
    const files = {
      [`${HOME}/.ssh/config`]: "Host gpu-a\n  Include extra\n  User after-include\n",
      [`${HOME}/.ssh/extra`]: "Host other\n  HostName 198.18.0.50\n",
    };
    // ssh restores the gpu-a block's state after the include, so the User line still applies.
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "after-include" });
  });

  it("applies nothing from a file included under a block that does not apply, even its own Host lines", () => {
    const files = {
      [`${HOME}/.ssh/config`]: "Host gpu-a\n  User ops\nHost nothing-here\n  Include extra\n",
      [`${HOME}/.ssh/extra`]: "Host gpu-a\n  HostName 198.18.0.50\n",
    };
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "ops" });
  });

  it("globs in any path segment, with character classes, and reads relative paths from ~/.ssh even for a config named elsewhere", () => {
    const files = {
      "/etc/fleet/ssh_config": "Include hosts.d/lab[12]/*\n",
      [`${HOME}/.ssh/hosts.d/lab1/a`]: "Host gpu-a\n  HostName 198.18.0.12\n",
      [`${HOME}/.ssh/hosts.d/lab2/b`]: "Host gpu-a\n  HostName 198.18.0.99\n  User from-lab2\n",
      [`${HOME}/.ssh/hosts.d/lab3/c`]: "Host gpu-a\n  Port 2999\n",
    };
    expect(expandIncludePattern(`${HOME}/.ssh/hosts.d/lab[12]/*`, memoryFiles(files))).to.deep.equal([`${HOME}/.ssh/hosts.d/lab1/a`, `${HOME}/.ssh/hosts.d/lab2/b`]);
    expect(resolve(files, "gpu-a", { top: "/etc/fleet/ssh_config" })).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12", user: "from-lab2" });
    // A "[" without its "]" and the other regex characters are plain characters in a name.
    const odd = { [`${HOME}/.ssh/a[1.conf`]: "", [`${HOME}/.ssh/a+1.conf`]: "", [`${HOME}/.ssh/ab1xconf`]: "" };
    expect(expandIncludePattern(`${HOME}/.ssh/a[1.con*`, memoryFiles(odd))).to.deep.equal([`${HOME}/.ssh/a[1.conf`]);
    expect(expandIncludePattern(`${HOME}/.ssh/a+?.conf`, memoryFiles(odd))).to.deep.equal([`${HOME}/.ssh/a+1.conf`]);
  });

  it("skips an include that names no file, as ssh does", () => {
    const files = { [`${HOME}/.ssh/config`]: "Include missing.conf conf.d/*\nHost gpu-a\n  User ops\n" };
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "ops" });
  });

  it("refuses an include cycle, naming the chain", () => {
    const files = {
      [`${HOME}/.ssh/config`]: "Include a\n",
      [`${HOME}/.ssh/a`]: "Include b\n",
      [`${HOME}/.ssh/b`]: "Host x\nInclude ~/.ssh/a\n",
    };
    expect(() => resolve(files, "x")).to.throw(
      `/fixture/home/.ssh/b line 2: Include ~/.ssh/a reads /fixture/home/.ssh/a again inside itself (/fixture/home/.ssh/config -> /fixture/home/.ssh/a -> /fixture/home/.ssh/b -> /fixture/home/.ssh/a); remove one of these Include lines`,
    );
  });

  it(`refuses includes nested deeper than ssh's ${MAX_INCLUDE_DEPTH}, and reads ${MAX_INCLUDE_DEPTH}`, () => {
    const chain = (n: number) => {
      const files: Record<string, string> = { [`${HOME}/.ssh/config`]: "Include f1\n" };
      for (let i = 1; i <= n; i++) files[`${HOME}/.ssh/f${i}`] = i < n ? `Include f${i + 1}\n` : "Host deep\n  User bottom\n";
      return files;
    };
    expect(resolve(chain(MAX_INCLUDE_DEPTH), "deep")).to.deep.equal({ ...NOTHING, user: "bottom" });
    expect(() => resolve(chain(MAX_INCLUDE_DEPTH + 1), "deep")).to.throw(`/fixture/home/.ssh/f${MAX_INCLUDE_DEPTH} line 1: Include f${MAX_INCLUDE_DEPTH + 1} nests more than 16 files deep`);
  });

  it("refuses an included file that exists but cannot be read, naming the line", () => {
    const files = { [`${HOME}/.ssh/config`]: "Include secret\n", [`${HOME}/.ssh/secret`]: "" };
    const load = () => loadSshConfig(`${HOME}/.ssh/config`, files[`${HOME}/.ssh/config`], { home: HOME, files: memoryFiles(files, [`${HOME}/.ssh/secret`]) });
    expect(load).to.throw("/fixture/home/.ssh/config line 1: Include secret: /fixture/home/.ssh/secret cannot be read (EACCES); make it readable by this user or remove the Include");
  });
});

describe("ssh: ssh_config Match", () => {
  const top = (text: string) => ({ [`${HOME}/.ssh/config`]: text });

  it("applies a Match host block to the HostName obtained so far, and originalhost to the alias", () => {
    const files = top("Host gpu-a\n  HostName 10.1.0.5\nMatch host 10.1.*\n  User by-address\nMatch originalhost gpu-a\n  Port 2222\n");
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, hostName: "10.1.0.5", user: "by-address", port: 2222 });
  });

  it("names a host by a Match host line alone", () => {
    expect(resolve(top("Match host gpu-b,gpu-c\n  User ops\n"), "gpu-c")).to.deep.equal({ ...NOTHING, user: "ops" });
  });

  it("skips a Match block that does not apply, and one whose pattern list vetoes the host", () => {
    const files = top("Host gpu-a\n  Port 2200\nMatch host gpu-b\n  User wrong\nMatch originalhost gpu-*,!gpu-a\n  User vetoed\nHost *\n  User right\n");
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "right", port: 2200 });
  });

  it("judges Match user against the User obtained so far, else the local user; localuser against the local user", () => {
    const files = top("Host gpu-a\n  HostName 198.18.0.12\nMatch user op\n  Port 2001\nMatch localuser op !host 198.18.*\n  IdentityFile ~/.ssh/never\nMatch localuser op\n  User ops\nMatch user ops\n  IdentityFile ~/.ssh/ops\n");
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12", user: "ops", port: 2001, identityFile: "/fixture/home/.ssh/ops" });
    expect(resolve(files, "gpu-a", { localUser: "ci" })).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12" });
  });

  it("applies Match all to every host a Host line names, and ends the block before it", () => {
    const files = top("Host gpu-a\n  HostName 198.18.0.12\nMatch all\n  User everyone\n");
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, hostName: "198.18.0.12", user: "everyone" });
    expect(resolve(files, "elsewhere")).to.equal(undefined);
  });

  it("refuses a Match exec that could apply to the host, with the line and the fix", () => {
    const files = top('Match exec "test -f /tmp/vpn-up"\n  ProxyJump bastion\n');
    expect(() => resolve(files, "gpu-a")).to.throw(
      `/fixture/home/.ssh/config line 1: "Match exec test -f /tmp/vpn-up" cannot be evaluated by this program (it would run a command or resolve the network), and no other criterion on the line rules host gpu-a out; ` +
        `give the host as "user@address" in the stack config so its ssh_config entry is not read, add a "host" or "originalhost" criterion that excludes it, or point ssh.configFile at a config without this block`,
    );
  });

  it("passes over a Match exec that another criterion rules out, or whose block sets nothing read here", () => {
    const files = top('Match originalhost corp-* exec "vpn-check"\n  ProxyJump corp-gw\nMatch exec "true"\n  ServerAliveInterval 30\nHost gpu-a\n  User ops\n');
    expect(resolve(files, "gpu-a")).to.deep.equal({ ...NOTHING, user: "ops" });
  });

  it("refuses malformed Match lines as ssh does", () => {
    expect(() => resolve(top("Match host\n  User x\n"), "a")).to.throw('/fixture/home/.ssh/config line 1: Match host needs a value, e.g. "Match host gpu-*"');
    expect(() => resolve(top("Match all host a\n"), "a")).to.throw('/fixture/home/.ssh/config line 1: "all" cannot be combined with other Match criteria; write "Match all" alone');
    expect(() => resolve(top("Match hostname a\n"), "a")).to.throw("/fixture/home/.ssh/config line 1: Match hostname is not a criterion ssh knows; see ssh_config(5)");
  });
});
