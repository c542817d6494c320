/**
 * What a failed login or a lost connection says, at every stage a login can stop. The first words name
 * the host alias and address; the rest says what to check. Exact messages.
 */
import { expect } from "chai";
import { connectionLostMessage, loginClosedMessage, loginFailedMessage, loginTimeoutMessage } from "../../../lib/ssh/messages";

const T = { alias: "sim1", host: "198.18.0.11", port: 22, user: "root", connectTimeoutS: 10 };
const VIA = { ...T, jump: { alias: "bastion" } };

describe("ssh: login and connection messages", () => {
  it("says where a closed login stopped and what to check", () => {
    expect(loginClosedMessage(T, "connecting")).to.equal(
      "ssh to sim1 (198.18.0.11:22): the connection closed before TCP connected; check that the host is up and that port 22 is reachable from here",
    );
    expect(loginClosedMessage(T, "connected")).to.equal(
      "ssh to sim1 (198.18.0.11:22): the server closed the connection before login, without sending an SSH banner; " +
        "check that sshd (and not another service) listens on port 22 and accepts connections from here (firewall, TCP wrappers, sshd MaxStartups)",
    );
    expect(loginClosedMessage(T, "banner")).to.equal(
      "ssh to sim1 (198.18.0.11:22): the server closed the connection before login, after its SSH banner; " +
        "check that sshd runs and accepts this client and user root (sshd's log on the host says why it dropped the connection)",
    );
    expect(loginClosedMessage(VIA, "authenticating")).to.equal(
      "ssh to sim1 (198.18.0.11:22 via bastion): the server closed the connection during login as root; " +
        "check that sshd accepts this user and its key or password (sshd's log on the host says why)",
    );
  });

  it("names the setting that bounds a login, and how far it got", () => {
    expect(loginTimeoutMessage(T, "connecting")).to.equal(
      "ssh to sim1 (198.18.0.11:22): no SSH login within ssh.connectTimeoutS=10s (TCP never connected); " +
        "check that the host is up and sshd answers on port 22, or raise ssh.connectTimeoutS",
    );
    expect(loginTimeoutMessage(T, "authenticating")).to.include("(keys were exchanged, but login never finished)");
  });

  it("keeps ssh2's own reason for a failed login", () => {
    expect(loginFailedMessage(T, "All configured authentication methods failed")).to.equal(
      "ssh to sim1 (198.18.0.11:22): login as root failed: All configured authentication methods failed; check the address, port and credentials for this host",
    );
  });

  it("says a connection was lost, naming host, address and step", () => {
    expect(connectionLostMessage(T, "checkpoint hash of /srv/models/q")).to.equal(
      "host sim1: the SSH connection (198.18.0.11:22) was lost during checkpoint hash of /srv/models/q, before it reported an exit status; " +
        "check that the host and its sshd are up, then run again",
    );
  });
});
