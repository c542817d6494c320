import { expect } from "chai";
import { describeLocation, parseEvidenceLocation, stackPrefix } from "../../../lib/evidence/location";

describe("evidence store location", () => {
  it("is the project's folder when unset", () => {
    expect(parseEvidenceLocation(undefined)).to.deep.equal({ type: "folder" });
    expect(parseEvidenceLocation("")).to.deep.equal({ type: "folder" });
  });

  it("reads Pulumi's DIY backend form, keeping the prefix and putting each stack under it", () => {
    const at = parseEvidenceLocation("s3://narwhal-team/fleets/prod?endpoint=http://127.0.0.1:8333&region=eu-west-1&use_path_style=true&awssdk=v2");
    expect(at).to.deep.equal({ type: "s3", bucket: "narwhal-team", prefix: "fleets/prod", endpoint: "http://127.0.0.1:8333", region: "eu-west-1" });
    if (at.type !== "s3") throw new Error("unreachable");
    expect(stackPrefix(at, "dev")).to.equal("fleets/prod/dev/evidence");
    expect(describeLocation(at, "dev")).to.equal("s3://narwhal-team/fleets/prod/dev/evidence (http://127.0.0.1:8333)");
  });

  it("defaults to AWS S3 in us-east-1 without an endpoint, at the bucket's top without a prefix", () => {
    const at = parseEvidenceLocation("s3://narwhal-team");
    expect(at).to.deep.equal({ type: "s3", bucket: "narwhal-team", prefix: "", endpoint: "https://s3.us-east-1.amazonaws.com", region: "us-east-1" });
    if (at.type !== "s3") throw new Error("unreachable");
    expect(stackPrefix(at, "dev")).to.equal("dev/evidence");
  });

  for (const [url, words] of [
    ["s3://Bad_Bucket", 'names bucket "Bad_Bucket"'],
    ["s3://narwhal/a:b", 'has prefix segment "a:b"'],
    ["s3://narwhal/a%20b", 'has prefix segment "a%20b"'],
    ["s3://narwhal?endpoint=ftp://x", "use http:// or https://"],
    ["s3://narwhal?endpoint=http://h:1/path", "give only scheme, host and port"],
    ["s3://narwhal?bucket=x", 'has parameter "bucket"'],
    ["not a url", "is not a URL"],
  ] as const) {
    it(`refuses ${url}, saying it ${words}`, () => {
      expect(() => parseEvidenceLocation(url)).to.throw(words).with.property("code", "NARWHAL_EVIDENCE_LOCATION");
    });
  }
});
