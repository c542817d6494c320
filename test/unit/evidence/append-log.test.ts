import { expect } from "chai";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { appendLogLine } from "../../../lib/evidence/append-log";
import { rejectionOf, tempDirs } from "./helpers";

const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

describe("evidence store: append-only logs", () => {
  const dirs = tempDirs();
  const file = () => path.join(dirs.root(), "image-check", "logs", "e1.jsonl");

  it("appends lines, never rewriting what is there, and says where each one starts", async () => {
    const first = await appendLogLine(dirs.root(), "image-check", "e1.jsonl", '{"n":1}');
    const second = await appendLogLine(dirs.root(), "image-check", "e1.jsonl", '{"n":2}\n');
    expect(first).to.deep.equal({ relativePath: "image-check/logs/e1.jsonl", offset: 0, bytes: 8, sha256: sha('{"n":1}\n') });
    expect(second).to.deep.equal({ relativePath: "image-check/logs/e1.jsonl", offset: 8, bytes: 8, sha256: sha('{"n":2}\n') });
    expect(fs.readFileSync(file(), "utf8")).to.equal('{"n":1}\n{"n":2}\n');
    expect(fs.statSync(file()).mode & 0o777).to.equal(0o600);
    expect(fs.statSync(path.dirname(file())).mode & 0o777).to.equal(0o700);
  });

  it("refuses a line holding a registered secret and writes nothing", async () => {
    await appendLogLine(dirs.root(), "image-check", "e1.jsonl", "kept");
    const error = await rejectionOf(appendLogLine(dirs.root(), "image-check", "e1.jsonl", "key=hunter2-secret-value", { secrets: ["hunter2-secret-value"] }));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_SECRET");
    expect(error.message).to.equal("image-check log e1.jsonl refused a line: a registered secret (plain) starts at byte 4; nothing was written");
    expect(fs.readFileSync(file(), "utf8")).to.equal("kept\n");
  });

  it("does not follow a symbolic link standing at the log's name", async () => {
    const target = path.join(dirs.tmp(), "elsewhere.jsonl");
    fs.writeFileSync(target, "");
    fs.mkdirSync(path.dirname(file()), { recursive: true, mode: 0o700 });
    fs.symlinkSync(target, file());
    const error = await rejectionOf(appendLogLine(dirs.root(), "image-check", "e1.jsonl", "x"));
    expect(error.code).to.equal("NARWHAL_EVIDENCE_SYMLINK");
    expect(error.message).to.equal(`evidence log ${file()} is a symbolic link; the store does not follow it. Remove it and run again`);
    expect(fs.readFileSync(target, "utf8")).to.equal("");
  });

  it("refuses names that could leave the logs folder", async () => {
    for (const name of ["../e1.jsonl", "e1.json", ".hidden.jsonl"]) {
      const error = await rejectionOf(appendLogLine(dirs.root(), "image-check", name, "x"));
      expect(error.code, name).to.equal("NARWHAL_EVIDENCE_PATH");
    }
  });
});
