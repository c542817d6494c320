/** Liveness inputs: the endpoint a refresh probes, and for how long. */
import { z } from "zod";
import { nonEmpty, oneOf, positiveSeconds } from "../input-rules";
import { HEALTH_PATH } from "../../lib/liveness";

export const livenessInputs = z.object({
  service: oneOf("service", Object.keys(HEALTH_PATH)),
  name: nonEmpty("name"),
  hostAlias: nonEmpty("hostAlias"),
  url: z.unknown().refine((u) => typeof u === "string" && /^https?:\/\/[^/\s]+(\/\S*)?$/.test(u), { error: (iss) => `url must be the service's http(s) base URL, got ${JSON.stringify(iss.input)}` }),
  healthDeadlineS: positiveSeconds("healthDeadlineS"),
});
