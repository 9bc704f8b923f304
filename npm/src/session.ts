/** Types shared by the sans-IO sessions. */

/** A frame a sans-IO session wants sent. */
export type Transmit =
  | { type: "text"; text: string }
  | { type: "binary"; data: Uint8Array }
  | { type: "close"; code: number; reason: string };
