import pytest

from agentgym.envs.toolqa.calculator import CalculatorError, calculate


@pytest.mark.parametrize("expr, value", [
    ("1999 - 1850", 149), ("2 * (3 + 4)", 14), ("7 / 2", 3.5), ("7 // 2", 3), ("2 ^ 3 ^ 2", 512),
    ("-2 ^ 2", -4), ("1,234,567 - 1", 1234566), ("abs(3 - 10)", 7), ("max(1, 9, 4)", 9), ("sqrt(16)", 4.0),
    ("2.5e2", 250), ("round(2.6)", 3), ("10 % 4", 2),
])
def test_arithmetic(expr, value):
    assert calculate(expr) == value


@pytest.mark.parametrize("expr, message", [
    ("__import__('os').system('ls')", "unexpected character"), ("1 / 0", "division by zero"),
    ("9 ** 9 ** 9", "too large"), ("(1 + 2", r"expected '\)'"), ("", "empty"), ("1 +", "expected a number"),
    ("open(1)", "unknown function"), ("9" * 200, "out of range"), ("1" * 600, "longer than"),
    ("sqrt(-1)", "domain"), ("abs(1, 2)", "takes 1"),
])
def test_rejected_with_reason(expr, message):
    with pytest.raises(CalculatorError, match=message):
        calculate(expr)
