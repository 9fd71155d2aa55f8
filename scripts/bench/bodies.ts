// The request bodies the intake benchmarks send: one document's metadata, and a batch of 100.

/** A submit's body: one document's metadata. */
export const SUBMIT_BODY = JSON.stringify({
  filename: "contract.pdf",
  file_size: 48213,
  mime_type: "application/pdf",
  external_reference: "bench",
  item_metadata: { matter: "A-1" },
});

/** A batch of 100 documents' metadata. */
export const BATCH_BODY = JSON.stringify({
  items: Array.from({ length: 100 }, (_, i) => ({
    filename: `doc-${i}.pdf`,
    file_size: 1000 + i,
    mime_type: "application/pdf",
  })),
  external_reference: "bench-batch",
});
