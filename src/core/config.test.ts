import { describe, expect, it } from 'vitest';
import { checkKnownKeys, isInt, isNum, isObject, isOneOf, isOptionalFn, isProb } from './config.js';

describe('config primitives', () => {
  it('isInt: integers in an inclusive range, nothing else', () => {
    expect([isInt(0), isInt(-3), isInt(5, 1, 5), isInt(1, 1, 5)]).toEqual([true, true, true, true]);
    expect([isInt(6, 1, 5), isInt(0, 1), isInt(1.5), isInt(Infinity), isInt(NaN), isInt('1'), isInt(1n)])
      .toEqual([false, false, false, false, false, false, false]);
  });

  it('isNum: finite numbers in an inclusive range', () => {
    expect([isNum(0.5, 0, 1), isNum(-1e9), isNum(0, 0), isNum(1, 0, 1)]).toEqual([true, true, true, true]);
    expect([isNum(Infinity), isNum(-Infinity), isNum(NaN), isNum(2, 0, 1), isNum(-0.1, 0), isNum('0')])
      .toEqual([false, false, false, false, false, false]);
  });

  it('isProb, isObject, isOptionalFn, isOneOf', () => {
    expect([isProb(0), isProb(1), isProb(1.01), isProb(NaN)]).toEqual([true, true, false, false]);
    expect([isObject({}), isObject([]), isObject(null), isObject('x')]).toEqual([true, true, false, false]);
    expect([isOptionalFn(undefined), isOptionalFn(() => 0), isOptionalFn(null), isOptionalFn(1)]).toEqual([true, true, false, false]);
    expect([isOneOf('a', ['a', 'b']), isOneOf('c', ['a', 'b']), isOneOf(undefined, ['a'])]).toEqual([true, false, false]);
  });

  it('checkKnownKeys throws invalid-config naming the first unknown key, from a set or a defaults table', () => {
    expect(() => checkKnownKeys({ a: 1 }, new Set(['a']), (k) => `unknown '${k}'`)).not.toThrow();
    expect(() => checkKnownKeys({ a: 1, b: 2, c: 3 }, new Set(['a']), (k) => `unknown '${k}'`))
      .toThrow(expect.objectContaining({ code: 'invalid-config', message: "invalid-config: unknown 'b'" }));
    expect(() => checkKnownKeys({ x: 1 }, { x: 0 }, (k) => k)).not.toThrow();
    expect(() => checkKnownKeys({ y: 1 }, { x: 0 }, (k) => `no ${k}`)).toThrow('invalid-config: no y');
  });
});
