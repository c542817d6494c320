export interface DeploymentConfigInputs {
  stack: string;
  /** File name -> contents, as the runbook's Gate A writes them under config/. */
  files: Record<string, string>;
}

export interface DeploymentConfigOutputs {
  stack: string;
  /** Digest of every file's contents: what later gates record as "deployed with this config". */
  configDigest: string;
  /** Each file as written to the evidence store. */
  written: Record<string, { relativePath: string; sha256: string; bytes: number }>;
  record: { relativePath: string; digest: string };
}
