import { expect } from "chai";
import {
  checkImageIdentity,
  dockerRuntimeIdentity,
  familiarRepository,
  normalizePackageName,
  packagesOfInterest,
  parseImageInspect,
  parseImageRef,
  parsePackageList,
  parseVllmVersion,
} from "../../../lib/discovery/runtime";
import { DIGEST, IMAGE_ID, IMPORTED_INSPECT, PIP_LIST, VLLM_INSPECT } from "./fixtures/runtime";

const OTHER_DIGEST = "sha256:5168bea7300efe0555343c464db6844b240b1ff0df779b577cd5295b17a24183";
const OTHER_ID = "sha256:822b92367e5dad4cea5ba7814cf356d73768bfc9e53d1155e3c95d5251d12cb6";

describe("discovery: runtime identity", () => {
  describe("vllm --version", () => {
    const table: Array<[string, string, string | null]> = [
      ["the simulated host's shim", "0.29.0\n", "0.29.0"],
      [
        "log lines before the version",
        "INFO 11-28 10:01:12 [__init__.py:216] Automatically detected platform cuda.\nWARNING 11-28 10:01:13 [_custom_ops.py:20] Failed to import from vllm._C\n0.11.0\n",
        "0.11.0",
      ],
      ["a nightly", "0.11.1rc2.dev100+g1234abcd\n", "0.11.1rc2.dev100+g1234abcd"],
      ["a post release", "0.6.3.post1", "0.6.3.post1"],
      ["a ROCm build", "0.10.2+rocm700\n", "0.10.2+rocm700"],
      ["a broken install", "Traceback (most recent call last):\n  File \"/opt/venv/bin/vllm\", line 5\nModuleNotFoundError: No module named 'torch'\n", null],
      ["nothing", "", null],
    ];
    for (const [name, text, want] of table) it(name, () => expect(parseVllmVersion(text)).to.equal(want));
  });

  describe("package lists", () => {
    it("keeps the serving packages, with PEP 503 names", () => {
      const all = parsePackageList(PIP_LIST);
      expect(Object.keys(all)).to.have.length(14);
      expect(packagesOfInterest(all)).to.deep.equal({
        "flashinfer-python": "0.4.1",
        "huggingface-hub": "0.35.3",
        "libucx-cu12": "1.19.0",
        nixl: "0.7.1",
        safetensors: "0.6.2",
        tokenizers: "0.22.1",
        torch: "2.9.0+cu128",
        transformers: "4.57.1",
        triton: "3.5.0",
        "ucx-py-cu12": "0.45.0",
        vllm: "0.29.0",
      });
    });

    it("skips lines before the JSON", () => {
      expect(parsePackageList(`WARNING: Ignoring invalid distribution ~orch (/usr/local/lib/python3.12/dist-packages)\n${PIP_LIST}\n`)).to.include({ vllm: "0.29.0" });
    });

    const bad: Array<[string, string, string]> = [
      ["empty output", "", "no JSON package list in the output (it was empty)"],
      ["an error", "/usr/bin/python3: No module named pip\n", 'no JSON package list in the output: "/usr/bin/python3: No module named pip"'],
      ["cut JSON", '[{"name": "vllm", "vers', "the package list is not valid JSON"],
    ];
    for (const [name, text, message] of bad) it(`refuses ${name}`, () => expect(() => parsePackageList(text)).to.throw(message));

    it("normalizes names", () => {
      expect(["Flashinfer_Python", "ucx.py__cu12", "NIXL"].map(normalizePackageName)).to.deep.equal(["flashinfer-python", "ucx-py-cu12", "nixl"]);
    });
  });

  describe("image references", () => {
    const table: Array<[string, ReturnType<typeof parseImageRef>]> = [
      [IMAGE_ID, { kind: "id", id: IMAGE_ID }],
      [IMAGE_ID.slice("sha256:".length), { kind: "id", id: IMAGE_ID }],
      ["sha256:c0dfd31af347", { kind: "short-id", prefix: "sha256:c0dfd31af347" }],
      [`vllm/vllm-openai@${DIGEST}`, { kind: "digest", repository: "vllm/vllm-openai", digest: DIGEST }],
      [`registry.internal:5000/vllm/vllm-openai:v0.29.0@${DIGEST}`, { kind: "digest", repository: "registry.internal:5000/vllm/vllm-openai", digest: DIGEST }],
      ["vllm/vllm-openai:v0.29.0", { kind: "tag", repository: "vllm/vllm-openai", tag: "v0.29.0" }],
      ["registry.internal:5000/vllm", { kind: "tag", repository: "registry.internal:5000/vllm", tag: "latest" }],
    ];
    for (const [ref, want] of table) it(ref, () => expect(parseImageRef(ref)).to.deep.equal(want));

    it("compares Docker Hub names in their familiar form", () => {
      expect(["docker.io/library/ubuntu", "docker.io/vllm/vllm-openai", "library/ubuntu", "ghcr.io/library/x", "rocm/vllm"].map(familiarRepository)).to.deep.equal([
        "ubuntu",
        "vllm/vllm-openai",
        "ubuntu",
        "ghcr.io/library/x",
        "rocm/vllm",
      ]);
    });
  });

  describe("docker image inspect", () => {
    it("reads a pulled image: ID, digests, created, and only the UCX_/VLLM_/NCCL_ environment", () => {
      expect(parseImageInspect(VLLM_INSPECT)).to.deep.equal({
        imageId: IMAGE_ID,
        repoTags: ["vllm/vllm-openai:v0.29.0"],
        repoDigests: [`vllm/vllm-openai@${DIGEST}`],
        created: "2026-10-02T18:22:41.918273551Z",
        architecture: "amd64",
        os: "linux",
        env: { NCCL_CUMEM_ENABLE: "0", UCX_MEMTYPE_CACHE: "n", UCX_TLS: "", VLLM_USAGE_SOURCE: "production-docker-image" },
      });
    });

    it("reads Docker 20.10's output for an imported image (recorded)", () => {
      const got = parseImageInspect(IMPORTED_INSPECT);
      expect(got.imageId).to.equal("sha256:4f361d8984b01d9e2ea949486408cb7b554349253545018e4b20044db1db35de");
      expect(got.repoDigests).to.deep.equal([]);
      expect(got.env).to.deep.equal({ NCCL_CUMEM_ENABLE: "0", UCX_TLS: "tcp,cuda_copy", VLLM_USAGE_SOURCE: "production-docker-image" });
    });

    it("accepts the array `docker image inspect` prints without --format", () => {
      expect(parseImageInspect(`[${VLLM_INSPECT}]`).imageId).to.equal(IMAGE_ID);
    });

    it("refuses output without an image", () => {
      expect(() => parseImageInspect("")).to.throw(/did not print JSON/);
      expect(() => parseImageInspect("{}")).to.throw("docker image inspect printed no image Id");
    });
  });

  describe("immutable identity", () => {
    const pulled = parseImageInspect(VLLM_INSPECT);
    const imported = parseImageInspect(IMPORTED_INSPECT);
    const table: Array<[string, string, typeof pulled, { ok: boolean; resolvedDigest: string | null; problems: string[] }]> = [
      ["the image ID itself", IMAGE_ID, pulled, { ok: true, resolvedDigest: DIGEST, problems: [] }],
      [
        "another image ID",
        OTHER_ID,
        pulled,
        {
          ok: false,
          resolvedDigest: DIGEST,
          problems: [`runtime.image ${OTHER_ID} resolves on host sim1 to image ${IMAGE_ID}; the configured image ID must equal the inspected .Id — load the pinned image or rerun discovery`],
        },
      ],
      [
        "a short ID",
        "sha256:c0dfd31af347",
        pulled,
        { ok: false, resolvedDigest: DIGEST, problems: [`runtime.image sha256:c0dfd31af347 is a short image ID; pin the full ID ${IMAGE_ID} (it matched on host sim1)`] },
      ],
      ["the registry digest", `vllm/vllm-openai@${DIGEST}`, pulled, { ok: true, resolvedDigest: DIGEST, problems: [] }],
      ["the digest written with docker.io/ and a tag", `docker.io/vllm/vllm-openai:v0.29.0@${DIGEST}`, pulled, { ok: true, resolvedDigest: DIGEST, problems: [] }],
      [
        "a digest the image was not pulled by",
        `vllm/vllm-openai@${OTHER_DIGEST}`,
        pulled,
        {
          ok: false,
          resolvedDigest: DIGEST,
          problems: [
            `runtime.image vllm/vllm-openai@${OTHER_DIGEST}: the image on host sim1 (${IMAGE_ID}) does not list vllm/vllm-openai@${OTHER_DIGEST} in its RepoDigests (vllm/vllm-openai@${DIGEST}); pull it by that digest (docker pull vllm/vllm-openai@${OTHER_DIGEST}) so the runtime resolves the configured bytes`,
          ],
        },
      ],
      [
        "the right digest under a mirror's name",
        `registry.internal:5000/vllm/vllm-openai@${DIGEST}`,
        pulled,
        {
          ok: false,
          resolvedDigest: null,
          problems: [
            `runtime.image registry.internal:5000/vllm/vllm-openai@${DIGEST}: the image on host sim1 (${IMAGE_ID}) does not list registry.internal:5000/vllm/vllm-openai@${DIGEST} in its RepoDigests (vllm/vllm-openai@${DIGEST}); the digest appears only as vllm/vllm-openai@${DIGEST}; pull it by that digest (docker pull registry.internal:5000/vllm/vllm-openai@${DIGEST}) so the runtime resolves the configured bytes`,
          ],
        },
      ],
      [
        "a tag",
        "vllm/vllm-openai:v0.29.0",
        pulled,
        {
          ok: false,
          resolvedDigest: DIGEST,
          problems: [`runtime.image vllm/vllm-openai:v0.29.0 is a mutable tag; pin an image ID (sha256:…) or a digest (repo@sha256:…) — it resolves on host sim1 to image ${IMAGE_ID} (vllm/vllm-openai@${DIGEST})`],
        },
      ],
      [
        "a digest for a locally built image (no RepoDigests)",
        `narwhal-probe-record@${DIGEST}`,
        imported,
        {
          ok: false,
          resolvedDigest: null,
          problems: [
            `runtime.image narwhal-probe-record@${DIGEST}: the image on host sim1 (${imported.imageId}) does not list narwhal-probe-record@${DIGEST} in its RepoDigests (none); pull it by that digest (docker pull narwhal-probe-record@${DIGEST}) so the runtime resolves the configured bytes`,
          ],
        },
      ],
      ["a locally built image pinned by ID", imported.imageId, imported, { ok: true, resolvedDigest: null, problems: [] }],
    ];
    for (const [name, configured, inspect, want] of table) {
      it(name, () => {
        const got = checkImageIdentity(configured, inspect, "sim1");
        expect({ ok: got.ok, resolvedDigest: got.resolvedDigest, problems: got.problems }).to.deep.equal(want);
      });
    }

    it("combines inspect, identity and the container's packages", () => {
      const all = parsePackageList(PIP_LIST);
      const got = dockerRuntimeIdentity(
        `vllm/vllm-openai@${DIGEST}`,
        pulled,
        { packages: packagesOfInterest(all), packageCount: 14, packagesSource: "pip", packagesUnknownReason: null },
        "sim1",
      );
      expect(got).to.deep.include({ kind: "docker", imageId: IMAGE_ID, resolvedDigest: DIGEST, vllmVersion: "0.29.0", packagesSource: "pip" });
      expect(got.identity.ok).to.equal(true);
      expect(got.packages).to.include({ nixl: "0.7.1", "ucx-py-cu12": "0.45.0", torch: "2.9.0+cu128", transformers: "4.57.1" });
    });
  });
});
