// Seeded multi-step problems for calculator-tools-v0: numbers big enough that a calculator helps,
// answers exact by construction (integers, or cents with 2 decimals).
import type { Rng } from '../rng.js';

export interface CalcProblem {
  template: string;
  question: string;
  answer: number;
}

type Template = (rng: Rng) => CalcProblem;

const warehouse: Template = (rng) => {
  const shelves = rng.int(12, 96);
  const per = rng.int(137, 989);
  const shipped = rng.int(1000, shelves * per - 1);
  const trucks = rng.int(3, 9);
  const total = shelves * per - shipped;
  const loaded = total - (total % trucks);
  return {
    template: 'warehouse',
    question: `A warehouse has ${shelves} shelves holding ${per} boxes each. ${shipped} boxes are shipped out. The remaining boxes are loaded onto ${trucks} trucks, each truck taking the same number of boxes, as many as possible. How many boxes are left over in the warehouse?`,
    answer: total - loaded,
  };
};

const invoice: Template = (rng) => {
  const qty = rng.int(7, 64);
  const cents = rng.int(199, 9999);
  const discountPct = rng.pick([5, 10, 15, 20, 25]);
  // Work in cents so the answer is exact to 2 decimals.
  const gross = qty * cents;
  const net = Math.round((gross * (100 - discountPct)) / 100);
  return {
    template: 'invoice',
    question: `An order has ${qty} items at $${(cents / 100).toFixed(2)} each, with a ${discountPct}% discount on the total. What is the total after the discount, in dollars (rounded to the cent)?`,
    answer: net / 100,
  };
};

const powers: Template = (rng) => {
  const a = rng.int(11, 39);
  const b = rng.int(2, 9);
  const c = rng.int(3, 5);
  const d = rng.int(101, 999);
  return { template: 'powers', question: `What is ${a}^${c} - ${b}^${c + 2} + ${d} * ${b}?`, answer: a ** c - b ** (c + 2) + d * b };
};

const savings: Template = (rng) => {
  const weekly = rng.int(37, 289);
  const weeks = rng.int(13, 52);
  const spent = rng.int(100, weekly * weeks - 1);
  const friends = rng.int(2, 7);
  const share = Math.floor((weekly * weeks - spent) / friends);
  return {
    template: 'savings',
    question: `Mira saves $${weekly} every week for ${weeks} weeks, then spends $${spent}. She splits what is left equally among ${friends} friends in whole dollars. How many whole dollars does each friend get?`,
    answer: share,
  };
};

const area: Template = (rng) => {
  const w = rng.int(23, 187);
  const h = rng.int(23, 187);
  const cw = rng.int(3, Math.floor(w / 2));
  const ch = rng.int(3, Math.floor(h / 2));
  const price = rng.int(13, 79);
  return {
    template: 'area',
    question: `A ${w} m by ${h} m field has a ${cw} m by ${ch} m pond in it. Sowing grass costs $${price} per square metre. How much does it cost to sow the field except the pond, in dollars?`,
    answer: (w * h - cw * ch) * price,
  };
};

const TEMPLATES: Template[] = [warehouse, invoice, powers, savings, area];

export function generateCalcProblem(rng: Rng): CalcProblem {
  return rng.pick(TEMPLATES)(rng);
}
