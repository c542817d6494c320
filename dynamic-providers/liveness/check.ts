/** Liveness inputs: the endpoint a refresh probes, and for how long. */
import { z } from "zod";
import { httpBaseUrl, nonEmpty, oneOf, positiveSeconds } from "../input-rules";
import { HEALTH_PATH } from "../../lib/liveness";

export const livenessInputs = z.object({
  service: oneOf("service", Object.keys(HEALTH_PATH)),
  name: nonEmpty("name"),
  hostAlias: nonEmpty("hostAlias"),
  url: httpBaseUrl("url", "the service's"),
  healthDeadlineS: positiveSeconds("healthDeadlineS"),
});
