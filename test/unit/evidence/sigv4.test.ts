import { expect } from "chai";
import { EMPTY_SHA256, signRequest, uriEncode } from "../../../lib/evidence/s3/sigv4";

// AWS's published example (S3 API reference, "Signature Calculations for the Authorization Header",
// Example: GET Object): the same request must give the same signature.
const EXAMPLE = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" };

describe("SigV4 signing", () => {
  it("reproduces AWS's published GET Object example", () => {
    const headers = signRequest(
      { method: "GET", url: new URL("https://examplebucket.s3.amazonaws.com/test.txt"), headers: { Range: "bytes=0-9" }, payloadSha256: EMPTY_SHA256 },
      EXAMPLE,
      "us-east-1",
      new Date("2013-05-24T00:00:00Z"),
    );
    expect(headers.authorization).to.equal(
      "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
    );
    expect(headers["x-amz-date"]).to.equal("20130524T000000Z");
  });

  it("signs a different payload differently, and carries a session token when given", () => {
    const sign = (payloadSha256: string, sessionToken?: string) =>
      signRequest({ method: "PUT", url: new URL("http://127.0.0.1:8333/b/k"), headers: {}, payloadSha256 }, { ...EXAMPLE, sessionToken }, "us-east-1", new Date(0));
    expect(sign(EMPTY_SHA256).authorization).not.to.equal(sign("0".repeat(64)).authorization);
    const withToken = sign(EMPTY_SHA256, "token");
    expect(withToken["x-amz-security-token"]).to.equal("token");
    expect(withToken.authorization).to.contain("x-amz-security-token");
  });

  it("encodes as RFC 3986 wants, keeping / only in paths", () => {
    expect(uriEncode("a b/c~d*é", true)).to.equal("a%20b/c~d%2A%C3%A9");
    expect(uriEncode("a/b", false)).to.equal("a%2Fb");
  });
});
