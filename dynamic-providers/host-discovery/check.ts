/** HostDiscovery inputs: what a login and the host's folders are built from, refused before anything remote. */
import { z } from "zod";
import { absolutePath, list, nonEmpty, positiveInteger, positiveSeconds, sha256Digest, stackName, tcpPort } from "../input-rules";

export const discoveryInputs = z.object({
  alias: nonEmpty("alias"),
  host: nonEmpty("host"),
  port: tcpPort("port"),
  user: nonEmpty("user"),
  connectTimeoutS: positiveSeconds("connectTimeoutS"),
  maxSessions: positiveInteger("maxSessions"),
  fabricInterface: nonEmpty("fabricInterface"),
  modelDir: absolutePath("modelDir"),
  devicePaths: list("devicePaths"),
  plannedPorts: list("plannedPorts"),
  policyDigest: sha256Digest("policyDigest"),
  // The stack and stateDir name the folder a destroy removes on the host.
  stack: stackName(),
  stateDir: absolutePath("stateDir"),
});
