/**
 * Where engines' liveness records made before the Liveness resource existed point (their state names
 * this path as their provider): a refresh or destroy of such a stack, before an `up` rewrites the
 * record, runs the one implementation through here.
 */
export { provider } from "../liveness/provider";
