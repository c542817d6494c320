/**
 * The part of a preview's engine events the invalidation report reads. The Automation API's
 * `EngineEvent` has this shape, so its events pass straight in; the report itself needs no Pulumi.
 */
export interface StepState {
  readonly custom?: boolean;
  readonly inputs?: Record<string, unknown>;
  readonly outputs?: Record<string, unknown>;
}

/** One step the engine announces for a resource (`same`, `update`, `replace`, ...). */
export interface StepMetadata {
  readonly op: string;
  readonly urn: string;
  readonly type: string;
  readonly old?: StepState;
  readonly new?: StepState;
  /** The provider's replace keys. */
  readonly keys?: readonly string[];
  /** The inputs that differ. */
  readonly diffs?: readonly string[];
}

export interface PreviewEvent {
  readonly resourcePreEvent?: { readonly metadata: StepMetadata };
}
