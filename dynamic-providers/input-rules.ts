/** The pieces the providers' input schemas share; they live in lib/ and are named here for the providers. */
export * from "../lib/input-rules";
