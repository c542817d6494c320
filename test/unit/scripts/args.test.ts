import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { parseFlags, parseFlagsAndWords, positiveNumber, required, UsageError } from "../../../scripts/args";
import { parseExportRecordArgs } from "../../../scripts/export-record";
import { parseImportArgs } from "../../../scripts/import";
import { parseInvalidatedArgs } from "../../../scripts/invalidated";
import { parseReportArgs } from "../../../scripts/report";
import { parseRouterRequestArgs } from "../../../scripts/router-request";
import { parseVerifyArgs } from "../../../scripts/verify";

const OPTIONS = { stack: { type: "string" }, json: { type: "boolean" }, only: { type: "string", multiple: true } } as const;
const WANTS = { stack: "a stack name", only: "an engine id" };
const refused = (f: () => unknown, message: string) => expect(f).to.throw(UsageError).with.property("message", message);

describe("scripts: command-line flags", () => {
  it("reads string, boolean and repeated flags, with a space or an =", () => {
    expect(parseFlags(["--stack", "dev", "--json", "--only=e1", "--only", "e2"], OPTIONS, WANTS)).to.deep.equal({ stack: "dev", json: true, only: ["e1", "e2"] });
    expect(parseFlags([], OPTIONS, WANTS)).to.deep.equal({});
  });

  it("refuses an unknown flag in one line, naming it and the flags the command takes", () => {
    refused(() => parseFlags(["--stak", "dev"], OPTIONS, WANTS), "unknown flag --stak; this command takes --stack, --json, --only");
    refused(() => parseFlags(["-s", "dev"], OPTIONS, WANTS), "unknown flag -s; this command takes --stack, --json, --only");
  });

  it("refuses a flag without its value, naming what it wants, whether it is last, followed by a flag, or empty", () => {
    refused(() => parseFlags(["--stack"], OPTIONS, WANTS), "--stack needs a value: a stack name");
    refused(() => parseFlags(["--stack", "--json"], OPTIONS, WANTS), "--stack needs a value: a stack name");
    refused(() => parseFlags(["--stack="], OPTIONS, WANTS), "--stack needs a value: a stack name");
    refused(() => parseFlags(["--only", "e1", "--only="], OPTIONS, WANTS), "--only needs a value: an engine id");
  });

  it("refuses a value given to a switch, and a stray word", () => {
    refused(() => parseFlags(["--json=yes"], OPTIONS, WANTS), '--json takes no value, got "yes"');
    refused(() => parseFlags(["--stack", "dev", "extra"], OPTIONS, WANTS), 'unexpected argument "extra": every value follows its flag (--stack, --json, --only)');
  });

  it("keeps words for a command that takes them", () => {
    expect(parseFlagsAndWords(["http://a", "--json"], OPTIONS, WANTS)).to.deep.equal({ values: { json: true }, positionals: ["http://a"] });
  });

  it("says which flag is required and which number is bad", () => {
    refused(() => required(undefined, "stack", "a stack name"), "--stack is required: a stack name");
    expect(required("dev", "stack", "a stack name")).to.equal("dev");
    expect(positiveNumber("rounds", undefined, 3)).to.equal(3);
    expect(positiveNumber("rounds", "2.5", 3)).to.equal(2.5);
    for (const bad of ["0", "-1", "many", "", " ", "Infinity"]) refused(() => positiveNumber("rounds", bad, 3), `--rounds wants a positive number, got ${JSON.stringify(bad)}`);
  });
});

describe("scripts: each command's arguments", () => {
  it("export-record: --stack and --out, a relative --out taken from where the command was called", () => {
    const caller = path.join(os.tmpdir(), "caller");
    expect(parseExportRecordArgs(["--stack", "dev", "--out", "export"], caller)).to.deep.equal({ stack: "dev", out: path.join(caller, "export") });
    expect(parseExportRecordArgs(["--out=/tmp/x", "--stack=dev"], "/elsewhere")).to.deep.equal({ stack: "dev", out: "/tmp/x" });
    refused(() => parseExportRecordArgs(["--stack", "dev"], "/"), "--out is required: a folder to write the sanitised copy to");
    refused(() => parseExportRecordArgs(["--out", "x"], "/"), "--stack is required: a stack name");
  });

  it("import: every documented flag, --env and --stack required, and the stack name checked", () => {
    const all = ["--env", ".env", "--fleet", "f.json", "--profiles", "p.json", "--calibration", "c.json", "--ssh-config", "ssh", "--ssh-key", "k", "--stack", "lab"];
    expect(parseImportArgs(all)).to.deep.equal({ env: ".env", fleet: "f.json", profiles: "p.json", calibration: "c.json", "ssh-config": "ssh", "ssh-key": "k", stack: "lab" });
    refused(() => parseImportArgs(["--stack", "lab"]), "--env is required: the runbook deployment's .env file");
    refused(() => parseImportArgs(["--env", ".env"]), "--stack is required: a stack name");
    refused(() => parseImportArgs(["--env", ".env", "--stack", "a/b"]), '--stack "a/b": a stack name is letters, digits, "_", "." and "-"');
    refused(() => parseImportArgs(["--env", ".env", "--stack", "lab", "--ssh-key"]), "--ssh-key needs a value: an SSH private key file");
  });

  it("invalidated, verify and report: --stack with their switches", () => {
    expect(parseInvalidatedArgs(["--stack", "dev"])).to.deep.equal({ stack: "dev", json: false, refresh: false });
    expect(parseInvalidatedArgs(["--json", "--refresh", "--stack=dev"])).to.deep.equal({ stack: "dev", json: true, refresh: true });
    expect(parseVerifyArgs(["--stack", "dev", "--json"])).to.deep.equal({ stack: "dev", json: true });
    refused(() => parseVerifyArgs(["--stack", "dev", "--refresh"]), "unknown flag --refresh; this command takes --stack, --json");
    expect(parseReportArgs(["--stack", "dev"])).to.deep.equal({ stack: "dev", offline: false });
    expect(parseReportArgs(["--stack", "dev", "--out", "r.html", "--offline"])).to.deep.equal({ stack: "dev", out: "r.html", offline: true });
    refused(() => parseReportArgs(["--stack"]), "--stack needs a value: a stack name");
    refused(() => parseReportArgs(["--offline"]), "--stack is required: a stack name");
  });

  it("router-request: one http(s) URL", () => {
    expect(parseRouterRequestArgs(["http://198.18.0.11:8000"])).to.equal("http://198.18.0.11:8000");
    refused(() => parseRouterRequestArgs([]), "expected one router URL, got none");
    refused(() => parseRouterRequestArgs(["http://a", "http://b"]), 'expected one router URL, got "http://a" "http://b"');
    refused(() => parseRouterRequestArgs(["198.18.0.11:8000"]), '"198.18.0.11:8000" is not a router URL: expected http:// or https://');
  });
});
