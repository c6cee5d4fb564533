"""remat.Error and a subclass per remat_status, raised with the library's message."""


class Error(Exception):
    """A remat call failed: |status| is the remat_status value, the text the library's message."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    status = 1


class PlanCorruptError(Error):
    status = 2


class PlanVersionError(Error):
    status = 3


class UnknownOpError(Error):
    status = 4


class BadArityError(Error):
    status = 5


class BadShapeError(Error):
    status = 6


class BadDtypeError(Error):
    status = 7


class OutOfRegionError(Error):
    status = 8


class OverlapError(Error):
    status = 9


class ArenaTooSmallError(Error):
    status = 10


class NotFoundError(Error, KeyError):
    status = 11

    def __str__(self):  # KeyError would quote the message
        return Exception.__str__(self)


class OutOfRangeError(Error):
    status = 12


class UnavailableError(Error):
    status = 13


class ResourceExhaustedError(Error):
    status = 14


class FailedPreconditionError(Error):
    status = 15


class UnimplementedError(Error):
    status = 16


class InternalError(Error):
    status = 17


class MisalignedError(Error):
    status = 18


class StateMismatchError(Error):
    status = 19


class DataLossError(Error):
    status = 20


class CallbackError(Error):
    status = 21


class NonFiniteError(Error):
    status = 22


class CompileError(Error):
    """`remat compile` refused the model; the message is the command's."""


BY_STATUS = {cls.status: cls for cls in Error.__subclasses__() if cls.status is not None}


def raise_for(status, message):
    """Raises the Error subclass of |status| (a remat_status) with |message|; nothing for 0."""
    if status == 0:
        return
    cls = BY_STATUS.get(status, Error)
    raise cls(message, status)


__all__ = ["Error", "CompileError"] + [cls.__name__ for cls in BY_STATUS.values()]
