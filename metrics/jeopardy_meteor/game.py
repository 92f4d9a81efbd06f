"""Checks of the numeric inputs of ``jeopardy_meteor``: question numbers (values), confidences, thresholds."""

import math
import numbers
import warnings


def check_number(name, value):
    """``value`` must be a real, finite number (not a bool)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def low_confidence(count, confidences=None, confidence_threshold=None):
    """Per question, True where the confidence is below the threshold (the system abstains)."""
    if (confidences is None) != (confidence_threshold is None):
        raise ValueError("confidences and confidence_threshold go together: give both or neither")
    if confidences is None:
        return [False] * count
    check_number("confidence_threshold", confidence_threshold)
    confidences = list(confidences)
    if len(confidences) != count:
        raise ValueError(f"got {len(confidences)} confidences for {count} predictions")
    for index, confidence in enumerate(confidences):
        if not _is_real(confidence):
            raise TypeError(f"confidence {index}: expected a number, got {confidence!r}")
    return [confidence < confidence_threshold for confidence in confidences]


def checked_numbers(question_numbers, count, multiplier=1):
    """The question numbers as ints, after checking them and ``multiplier``."""
    question_numbers = [_integral(index, number) for index, number in enumerate(question_numbers)]
    if len(question_numbers) != count:
        raise ValueError(f"got {len(question_numbers)} question numbers for {count} predictions")
    if not _is_real(multiplier) or not math.isfinite(multiplier) or multiplier <= 0:
        raise ValueError(f"value_multiplier must be a finite positive number, got {multiplier!r}")
    return question_numbers


def question_values(question_numbers, count, multiplier=1):
    """The value of each question: its number in the topic (1-5) times ``multiplier``."""
    question_numbers = checked_numbers(question_numbers, count, multiplier)
    outside = [index for index, number in enumerate(question_numbers) if not 1 <= number <= 5]
    if outside:
        shown = ", ".join(f"{i} ({question_numbers[i]})" for i in outside[:5])
        warnings.warn(f"{len(outside)} question number(s) outside 1-5, scored as given: {shown}", stacklevel=3)
    return [number * multiplier for number in question_numbers]


def _integral(index, number):
    """An int, or a float with an integral value (2.0) as int; anything else is an error."""
    if isinstance(number, numbers.Integral) and not isinstance(number, bool):
        return int(number)
    if isinstance(number, numbers.Real) and not isinstance(number, bool) and math.isfinite(number):
        if float(number).is_integer():
            return int(number)
    raise TypeError(f"question number {index}: expected an integer, got {type(number).__name__} {number!r}")


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
