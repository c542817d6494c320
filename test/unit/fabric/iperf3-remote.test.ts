import { expect } from "chai";
import { iperf3Commands } from "../../../lib/fabric/iperf3";
import { boundedArgv, clientLifetimeS, edgeLockWaitS, preflightScript, runDirOf, serverLifetimeS, serverStartScript, serverStopScript } from "../../../lib/fabric/iperf3-remote";

const commands = iperf3Commands({ serverAddress: "10.0.1.12", clientAddress: "10.0.1.11", port: 5201, durationS: 2 });

describe("iperf3 on the edge's hosts", () => {
  it("bounds the server and the client by timeout, and runs the server in its own session", () => {
    const start = serverStartScript(commands);
    expect(start).to.include(`setsid 'timeout' '-k' '5' '${serverLifetimeS(2)}' 'iperf3' '-s' '-B' '10.0.1.12' '-p' '5201' '-1' >"$dir/server.log" 2>&1 </dev/null &`);
    expect(boundedArgv(commands.client, clientLifetimeS(commands.settings.durationS))).to.deep.equal(["timeout", "-k", "5", "22", "iperf3", "-c", "10.0.1.12", "-B", "10.0.1.11", "-p", "5201", "-t", "2", "-J"]);
    expect(serverLifetimeS(2)).to.equal(37);
    expect(edgeLockWaitS(2)).to.equal(134);
  });

  it("checks the port only on the destination", () => {
    expect(preflightScript(5201)).to.include("'sport = :5201'");
    expect(preflightScript(null)).to.not.include("sport");
    expect(preflightScript(null)).to.include(`grep '"iperf3"'`);
  });

  it("stops only a measurement's own run folder", () => {
    expect(runDirOf("b", "/tmp/narwhal-fabric.AbC12345\n")).to.equal("/tmp/narwhal-fabric.AbC12345");
    expect(() => runDirOf("b", "mktemp: failed\n")).to.throw('host b: the iperf3 server start printed no run folder: "mktemp: failed\\n"');
    expect(serverStopScript("/tmp/narwhal-fabric.AbC12345", 5201)).to.include("rm -rf '/tmp/narwhal-fabric.AbC12345'");
    expect(() => serverStopScript("/tmp/../etc", 5201)).to.throw('not a measurement run folder: "/tmp/../etc"');
  });
});
