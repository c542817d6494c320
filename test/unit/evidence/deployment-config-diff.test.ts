import { expect } from "chai";
import { provider } from "../../../dynamic-providers/deployment-config/provider";
import { tempDirs } from "./helpers";

describe("deployment config: what a new config does to its record", () => {
  const dirs = tempDirs();
  const cwd = process.cwd();
  afterEach(() => process.chdir(cwd));

  async function written(files: Record<string, string>) {
    process.chdir(dirs.tmp());
    return (await provider.create({ stack: "dev", files })).outs;
  }

  it("is no change while every file's contents are the ones written", async () => {
    const olds = await written({ "a.yaml": "a: 1\n", "b.yaml": "b: 2\n" });
    expect(await provider.diff!("x", olds, { stack: "dev", files: { "b.yaml": "b: 2\n", "a.yaml": "a: 1\n" } })).to.deep.equal({ changes: false, replaces: [], deleteBeforeReplace: false });
  });

  it("writes a new record, reason `files`, when a file changed, was added or was dropped", async () => {
    const olds = await written({ "a.yaml": "a: 1\n" });
    for (const files of [{ "a.yaml": "a: 2\n" }, { "a.yaml": "a: 1\n", "b.yaml": "b: 2\n" }, {}]) {
      expect(await provider.diff!("x", olds, { stack: "dev", files })).to.deep.equal({ changes: true, replaces: ["files"], deleteBeforeReplace: false });
    }
  });

  it("only updates for another stack name", async () => {
    const olds = await written({ "a.yaml": "a: 1\n" });
    expect(await provider.diff!("x", olds, { stack: "prod", files: { "a.yaml": "a: 1\n" } })).to.deep.equal({ changes: true, replaces: [], deleteBeforeReplace: false });
  });
});
