/** The error a promise rejects with; a promise that resolves fails the test, saying what was expected. */
export async function rejection(p: Promise<unknown>, expected = "a rejection"): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error(`expected ${expected}`);
}
