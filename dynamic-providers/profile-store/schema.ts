/** ProfileStore's inputs as one zod schema (each issue names its property), the types it produces, and the outputs. */
import { z } from "zod";
import { idsProblem, rowProblem, type ProfileRow } from "../../lib/profiling/store";
import type { StoredLogin } from "../../lib/ssh/stored-login";
import { hasUnknown } from "../../lib/unknown";

const notPath = (iss: { input?: unknown }) => `path must be an absolute path on the router host without "..", got ${JSON.stringify(iss.input)}`;

/** One engine's measured profile, as its Profile resource recorded it. */
const storedProfile = z.object({
  engineId: z.string(),
  row: z.custom<ProfileRow>(),
  profileDigest: z.string(),
  /** The evidence artifact holding the engine's sidecar entry. */
  samples: z.object({ relativePath: z.string(), sha256: z.string() }),
});

const fields = z.object({
  stack: z.string(),
  /** Absolute path of the store on the router host (the fleet document's `profiles.path` under the router's folder). */
  path: z
    .string({ error: notPath })
    .startsWith("/", { error: notPath })
    .refine((p) => !p.split("/").includes(".."), { error: notPath }),
  /** Every fleet engine: profile ids must equal them exactly. */
  engineIds: z.array(z.string()),
  model: z.string(),
  /** The fleet's requested sweep, recorded in the sidecar as narwhal-profile records its options. */
  sweep: z.record(z.string(), z.unknown()),
  profiles: z.array(storedProfile),
  /** Where the router host is; absent = this machine's disk. */
  router: z.custom<StoredLogin>().optional(),
  routerPrivateKey: z.string().optional(),
  routerPassword: z.string().optional(),
});
export type ProfileStoreInputs = z.infer<typeof fields>;

/**
 * The inputs the check judges: the path, then the profiles against the engine list (ids equal, rows valid).
 * Loose: the cross-check reads the properties the shape does not list.
 */
export const storeInputs = fields
  .pick({ path: true })
  .loose()
  .superRefine(
    (news, ctx) => {
      const { profiles, engineIds } = news as unknown as Record<string, unknown>;
      if (hasUnknown(profiles) || hasUnknown(engineIds)) return;
      const lists = Object.entries({ profiles, engineIds });
      for (const [k, v] of lists) if (!Array.isArray(v)) ctx.addIssue({ code: "custom", path: [k], message: `${k} must be a list, got ${JSON.stringify(v)}` });
      if (lists.some(([, v]) => !Array.isArray(v))) return;
      const fail = (message: string) => ctx.addIssue({ code: "custom", path: ["profiles"], message });
      const listed = profiles as ProfileStoreInputs["profiles"];
      const problem = idsProblem(listed.map((x) => ({ iid: x.engineId })), engineIds as string[]);
      if (problem) fail(problem);
      for (const x of listed) {
        const bad = rowProblem(x.row as unknown as Record<string, unknown>);
        if (bad) fail(bad);
        else if (x.row.iid !== x.engineId) fail(`profile row ${x.row.iid} is filed under engine ${x.engineId}`);
      }
    },
    // The profiles are judged against the engine list even when the path is refused.
    { when: () => true },
  );

export type ProfileStoreOutputs = ProfileStoreInputs & {
  /** `sha256:` of the store's bytes as written. */
  storeDigest: string;
  samplesPath: string;
  samplesDigest: string;
  count: number;
  writtenAt: string;
};
