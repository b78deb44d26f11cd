// <tensorpeek-view src="…" tensor="…" tab="tensors|metadata|stats">: importing
// "tensorpeek/view" defines the element.
import type { Report } from './index.js';

export declare const MAX_ROWS: number;
export declare class TensorpeekView extends HTMLElement {
  static observedAttributes: string[];
  /** The inspection once read (`null` while reading or after an error). */
  report: Report | null;
}
declare global {
  interface HTMLElementTagNameMap { 'tensorpeek-view': TensorpeekView }
}
