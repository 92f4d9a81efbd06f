"""Input checks and the Jeopardy! game score for ``jeopardy_meteor``."""

import math
import numbers
import warnings


def check_texts(predictions, references):
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions for {len(references)} references")
    for index, prediction in enumerate(predictions):
        if prediction is not None and not isinstance(prediction, str):
            raise TypeError(f"prediction {index}: expected a string or None, got {type(prediction).__name__} {prediction!r}")
    for index, reference in enumerate(references):
        if not isinstance(reference, str):
            raise TypeError(f"reference {index}: expected a string, got {type(reference).__name__} {reference!r}")
        if not reference.strip():
            raise ValueError(f"reference {index}: the gold answer is empty")


def check_number(name, value):
    """``value`` must be a real, finite number (not a bool)."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def abstentions(predictions, confidences=None, confidence_threshold=None):
    """True where the system abstains: no prediction, a blank one, or a confidence below the threshold."""
    if (confidences is None) != (confidence_threshold is None):
        raise ValueError("confidences and confidence_threshold go together: give both or neither")
    flags = [prediction is None or not prediction.strip() for prediction in predictions]
    if confidences is None:
        return flags
    check_number("confidence_threshold", confidence_threshold)
    confidences = list(confidences)
    if len(confidences) != len(predictions):
        raise ValueError(f"got {len(confidences)} confidences for {len(predictions)} predictions")
    for index, confidence in enumerate(confidences):
        if not _is_real(confidence):
            raise TypeError(f"confidence {index}: expected a number, got {confidence!r}")
    return [flag or confidence < confidence_threshold for flag, confidence in zip(flags, confidences, strict=True)]


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


def game_score(values, correct, abstained):
    """+value for a correct answer, -value for a wrong one, 0 for an abstention."""
    return sum(0 if skip else (value if right else -value) for value, right, skip in zip(values, correct, abstained, strict=True))


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)
