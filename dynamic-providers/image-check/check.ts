/** ImageCheck's inputs as a zod schema: where evidence goes, how to log in, and the spec the check runs (lib/image-check). */
import { z } from "zod";
import { imageCheckProblems, RUNTIME_CHECK_SHA256, type ImageCheckSpec } from "../../lib/image-check";
import { hasUnknown } from "../diff";
import { isStackFolderName } from "../../lib/stack-name";
import { across, hostLogin, inOrder } from "../input-rules";
import type { ImageCheckInputs } from "./types";

export function specOf(i: ImageCheckInputs): ImageCheckSpec {
  return { engineId: i.engineId, hostAlias: i.hostAlias, plan: i.plan, runtime: i.runtime, modelDir: i.modelDir, pins: i.pins, dsRequired: i.dsRequired, deadlines: i.deadlines };
}

const login = hostLogin();

/** The plan hash is the plan's own, and the spec's own rules hold once every value it needs is known. */
const againstPlan = across((news, refuse) => {
  const plan = news.plan as ImageCheckInputs["plan"] | undefined;
  if (!hasUnknown(plan) && plan?.planSha256 !== news.planSha256) refuse("planSha256", `planSha256 ${JSON.stringify(news.planSha256)} is not the plan's own hash ${JSON.stringify(plan?.planSha256)}`);
  const script = news.checkScriptSha256;
  if (script !== undefined && !hasUnknown(script) && script !== RUNTIME_CHECK_SHA256) {
    refuse("checkScriptSha256", `checkScriptSha256 ${JSON.stringify(script)} is not the runtime check this provider runs (${RUNTIME_CHECK_SHA256})`);
  }
  const spec = specOf(news as unknown as ImageCheckInputs);
  if (!hasUnknown(spec)) for (const p of imageCheckProblems(spec)) refuse(p.property, p.reason);
});

/** ImageCheckInputs, in the order their refusals are reported. */
export const imageCheckInputs = inOrder(
  z.looseObject({
    stack: z
      .unknown()
      .refine(isStackFolderName, { error: (iss) => `stack ${JSON.stringify(iss.input)} cannot name an evidence folder` })
      .optional(),
    login,
  }),
  againstPlan,
);
