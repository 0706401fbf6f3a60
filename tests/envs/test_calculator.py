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


@pytest.mark.parametrize("expr", ["(" * 200 + "1" + ")" * 200, "-" * 300 + "1", "abs(" * 80 + "1" + ")" * 80,
                                  "2^" * 100 + "1", "(" * 240],
                         ids=["parentheses", "signs", "functions", "exponents", "unclosed"])
def test_deep_nesting_is_rejected_not_a_recursion_error(expr):
    assert len(expr) <= 500  # inside the length limit: only the depth bound stops it
    with pytest.raises(CalculatorError, match="nested more than"):
        calculate(expr)


def test_depth_bound_holds_from_a_deep_caller_stack():
    def nest(frames):
        return nest(frames - 1) if frames else calculate("(" * 63 + "2" + ")" * 63)

    # A vector worker or an eval loop calls the tool from well inside its own stack.
    assert nest(400) == 2
