/** Operator answers carry no credits: the x-credits-* headers say 0 of 0. */
export const NO_CREDITS = { consumed: 0n, available: 0n };
